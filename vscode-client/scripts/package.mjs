// Packages the extension: `node scripts/package.mjs` (no server inside: it finds an installed one), or
// `node scripts/package.mjs --target linux-x64` (the server inside, for that platform: docs/vscode.md).
//
// A platform package carries under bundled/ the project's wheel (`pip wheel . --no-deps`), the wheels of its
// dependencies for each supported CPython (compiled ones per version: `pip download --only-binary :all:
// --python-version V --platform …`), a pip wheel to install them with, and server.json, which the extension
// reads: the requirement to install, the Python versions the wheels cover, and a digest of the wheel set
// (the stamp of an installed environment records it). The pip that builds it: $OSCOVA_BUILD_PYTHON, else the
// repository's .venv, else python3. The dependencies downloaded for a target are reused the same day (UTC) from
// $OSCOVA_PACKAGE_CACHE (default ~/.cache/oscova-vscode-package), keyed by the requirements and platform tags.
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { copyFileSync, cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const run = promisify(execFile);
const client = join(dirname(fileURLToPath(import.meta.url)), '..');
const repo = join(client, '..');
const bundled = join(client, 'bundled');

/** The CPython versions a platform package carries wheels for: each is installed and started in CI. */
export const PYTHON_VERSIONS = ['3.11', '3.12', '3.13'];

// VS Code's own floor is glibc 2.28 (manylinux_2_28) and macOS 10.15 / 11 (arm64). pip matches a custom
// --platform exactly, so every older tag a wheel may carry is listed.
const manylinux = (arch) => [
  ...Array.from({ length: 12 }, (_, i) => `manylinux_2_${28 - i}_${arch}`),
  `manylinux2014_${arch}`, ...(arch === 'x86_64' ? ['manylinux2010_x86_64', 'manylinux1_x86_64'] : []),
];
const macos = (arch, oldest) => {
  const tags = [];
  for (let major = 15; major >= 11; major--) tags.push(`macosx_${major}_0_${arch}`, `macosx_${major}_0_universal2`);
  if (oldest === 10) for (let minor = 15; minor >= 9; minor--) tags.push(`macosx_10_${minor}_${arch}`, `macosx_10_${minor}_universal2`);
  return tags;
};
export const TARGETS = {
  'linux-x64': manylinux('x86_64'),
  'linux-arm64': manylinux('aarch64'),
  'darwin-x64': macos('x86_64', 10),
  'darwin-arm64': macos('arm64', 11),
};

function buildPython() {
  if (process.env.OSCOVA_BUILD_PYTHON) return process.env.OSCOVA_BUILD_PYTHON;
  const venv = join(repo, '.venv', 'bin', 'python');
  return existsSync(venv) ? venv : 'python3';
}

async function pip(python, args, what) {
  const started = Date.now();
  try {
    await run(python, ['-m', 'pip', ...args, '--disable-pip-version-check', '--quiet'], { maxBuffer: 64 << 20 });
  } catch (error) {
    const lines = `${error.stderr ?? ''}`.split('\n').filter((l) => l && !/ is ignored: it is neither a file nor a directory/.test(l));
    throw new Error(`${what} failed:\n${lines.slice(-15).join('\n') || error.message}`, { cause: error });
  }
  console.log(`[package] ${what}: ${((Date.now() - started) / 1000).toFixed(1)} s`);
}

/** Fills bundled/ for a target; returns its server.json. */
async function bundleServer(target) {
  const platforms = TARGETS[target];
  if (!platforms) throw new Error(`unknown target ${target}: one of ${Object.keys(TARGETS).join(', ')}`);
  const python = buildPython();
  const scratch = mkdtempSync(join(os.tmpdir(), 'oscova-package-'));
  try {
    const { stdout: version } = await run(python, ['-c',
      'import tomllib; p = tomllib.load(open("pyproject.toml", "rb"))["project"]; print(p["version"]); print("\\n".join(p["dependencies"]))'],
    { cwd: repo });
    const [serverVersion, ...dependencies] = version.trim().split('\n');
    const requirements = join(scratch, 'requirements.txt');
    writeFileSync(requirements, `${dependencies.join('\n')}\n`);
    // The project's wheel, the dependencies for each Python version and pip, side by side (each job its own folder).
    const key = createHash('sha256').update(JSON.stringify([dependencies, platforms, PYTHON_VERSIONS, new Date().toISOString().slice(0, 10)]))
      .digest('hex').slice(0, 16);
    const cache = join(process.env.OSCOVA_PACKAGE_CACHE ?? join(os.homedir(), '.cache', 'oscova-vscode-package'), `${target}-${key}`);
    const cached = existsSync(join(cache, 'complete'));
    const downloads = cached ? cache : join(scratch, 'downloads');
    const jobs = [pip(python, ['wheel', '--no-deps', '-w', join(scratch, 'project'), repo], 'the project wheel (pip wheel . --no-deps)')];
    if (cached) console.log(`[package] the dependencies and pip: downloaded today, in ${cache}`);
    else {
      jobs.push(
        pip(python, ['download', '--only-binary', ':all:', '--no-deps', '-d', join(downloads, 'pip'), 'pip'], 'pip'),
        ...PYTHON_VERSIONS.map((v) => pip(python, ['download', '--only-binary', ':all:', '--python-version', v, '--implementation', 'cp',
          ...platforms.flatMap((p) => ['--platform', p]), '-d', join(downloads, `cp${v}`), '-r', requirements],
        `the dependencies for CPython ${v} on ${target}`)),
      );
    }
    await Promise.all(jobs);
    if (!cached) {
      rmSync(cache, { recursive: true, force: true });
      cpSync(downloads, cache, { recursive: true });
      writeFileSync(join(cache, 'complete'), '');
    }
    rmSync(bundled, { recursive: true, force: true });
    mkdirSync(join(bundled, 'wheels'), { recursive: true });
    mkdirSync(join(bundled, 'pip'), { recursive: true });
    const copyAll = (from) => { for (const name of readdirSync(from)) copyFileSync(join(from, name), join(bundled, 'wheels', name)); };
    copyAll(join(scratch, 'project'));
    for (const v of PYTHON_VERSIONS) copyAll(join(downloads, `cp${v}`));
    const [pipWheel] = readdirSync(join(downloads, 'pip'));
    copyFileSync(join(downloads, 'pip', pipWheel), join(bundled, 'pip', pipWheel));
    const wheels = readdirSync(join(bundled, 'wheels')).sort();
    const digest = createHash('sha256');
    for (const name of [...wheels, `pip/${pipWheel}`]) digest.update(`${name} ${statSync(join(bundled, name.startsWith('pip/') ? '' : 'wheels', name)).size}\n`);
    const manifest = {
      server: 'oscova-lsp',
      version: serverVersion,
      requirement: `oscova-lsp==${serverVersion}`,
      target,
      pythons: PYTHON_VERSIONS,
      pip: `pip/${pipWheel}`,
      wheels,
      digest: digest.digest('hex').slice(0, 16),
    };
    writeFileSync(join(bundled, 'server.json'), `${JSON.stringify(manifest, null, 2)}\n`);
    return manifest;
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

async function main() {
  const at = process.argv.indexOf('--target');
  const target = at > 0 ? process.argv[at + 1] : undefined;
  const vsce = join(client, 'node_modules', '.bin', 'vsce');
  const out = target ? `oscova-${target}.vsix` : 'oscova.vsix';
  if (target) {
    const manifest = await bundleServer(target);
    console.log(`[package] bundled/: ${manifest.requirement} and ${manifest.wheels.length} wheels for CPython ${manifest.pythons.join(', ')} on ${target}`);
  } else {
    rmSync(bundled, { recursive: true, force: true }); // a package without a server carries none of a previous target's
  }
  await run(vsce, ['package', '--no-dependencies', '--skip-license', '--allow-missing-repository', ...(target ? ['--target', target] : []),
    '--out', out], { cwd: client, maxBuffer: 64 << 20 });
  console.log(`[package] ${out}: ${(statSync(join(client, out)).size / 1e6).toFixed(1)} MB`);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  main().catch((error) => {
    console.error(`[package] ${error.message}`);
    process.exit(1);
  });
}
