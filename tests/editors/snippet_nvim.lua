-- Neovim 0.7 headless: the Neovim snippets of docs/editors.md as printed. $SETUP_SNIPPET (the client setup) is run
-- first, so its autocommand starts `oscova-lsp` for the file given on the command line; once the buffer has
-- its first diagnostics, $RUN_SNIPPET (the run from the editor) is run and whatever it prints ends the test.
vim.defer_fn(function() io.stderr:write('TIMEOUT\n'); vim.cmd('cquit 2') end, tonumber(os.getenv('DEADLINE_MS') or '40000'))

local function out(line)
  io.stdout:write(line .. '\n')
  io.stdout:flush()
end

local shown = vim.lsp.handlers['textDocument/publishDiagnostics']
local ran = false
vim.lsp.handlers['textDocument/publishDiagnostics'] = function(err, result, ctx, config)
  for _, d in ipairs(result.diagnostics) do
    out(('DIAG %s %d:%d %s'):format(vim.fn.fnamemodify(vim.uri_to_fname(result.uri), ':t'), d.range.start.line,
      d.range.start.character, tostring(d.code)))
  end
  shown(err, result, ctx, config)
  if ran or vim.uri_to_fname(result.uri) ~= vim.fn.expand('%:p') or #result.diagnostics == 0 then return end
  ran = true
  out('ROOT ' .. vim.lsp.get_client_by_id(ctx.client_id).config.root_dir)
  vim.schedule(function()
    -- Headless `print` goes to stderr between other messages: catch what the snippet prints, then quit.
    _G.print = function(...)
      out('PRINT ' .. table.concat(vim.tbl_map(tostring, { ... }), ' '))
      vim.schedule(function() vim.cmd('qall!') end)
    end
    dofile(os.getenv('RUN_SNIPPET'))
  end)
end

dofile(os.getenv('SETUP_SNIPPET'))
