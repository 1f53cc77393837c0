// ESLint for the extension: typescript-eslint's type-checked rules over src/, test/ and the scripts.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['out/', 'dist/', 'node_modules/', 'e2e/screenshots/'] },
  js.configs.recommended,
  {
    files: ['**/*.ts'],
    extends: [...tseslint.configs.recommendedTypeChecked],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      // node:test's `test()` returns a promise the runner itself awaits.
      '@typescript-eslint/no-floating-promises': ['error', {
        allowForKnownSafeCalls: [{ from: 'package', package: 'node:test', name: ['test', 'describe', 'it'] }],
      }],
    },
  },
  {
    // Tests read package.json and JSON answers as they come (`any`), and their doubles implement async
    // interfaces without awaiting anything.
    files: ['test/**/*.ts'],
    rules: {
      '@typescript-eslint/require-await': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
    },
  },
  {
    files: ['**/*.mjs'],
    languageOptions: { globals: Object.fromEntries(['process', 'console', 'URL', 'setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'Buffer', 'fetch', 'AbortController', 'AbortSignal', 'TextDecoder'].map((name) => [name, 'readonly'])) },
  },
);
