-- Neovim 0.7 headless: open $TARGET, start oscova-lsp ($SERVER_CMD) with vim.lsp.start_client, print the
-- diagnostics the server publishes for it, replace line $EDIT_LINE by $EDIT_TEXT and wait for the next publish.
local deadline = tonumber(os.getenv('DEADLINE_MS') or '30000')
vim.defer_fn(function() io.stderr:write('TIMEOUT\n'); vim.cmd('cquit 2') end, deadline)

local target = vim.uri_from_fname(vim.fn.fnamemodify(os.getenv('TARGET'), ':p'))
local edit_line = tonumber(os.getenv('EDIT_LINE'))
local edit_text = os.getenv('EDIT_TEXT')
local expect_gone = os.getenv('EXPECT_GONE')
local phase = 'initial'

local function dump(label, diagnostics)
  for _, d in ipairs(diagnostics) do
    io.stdout:write(('%s %d:%d %s %s\n'):format(label, d.range.start.line, d.range.start.character,
      tostring(d.code), d.message))
  end
  io.stdout:write(label .. ' END\n')
  io.stdout:flush()
end

local function has(diagnostics, code)
  for _, d in ipairs(diagnostics) do
    if tostring(d.code) == code then return true end
  end
  return false
end

local function on_diags(err, result, ctx, config)
  vim.lsp.handlers['textDocument/publishDiagnostics'](err, result, ctx, config)
  if result.uri ~= target then return end
  if phase == 'initial' and has(result.diagnostics, expect_gone) then
    dump('BEFORE', result.diagnostics)
    phase = 'edited'
    vim.schedule(function()
      vim.api.nvim_buf_set_lines(0, edit_line, edit_line + 1, false, { edit_text })
    end)
  elseif phase == 'edited' and not has(result.diagnostics, expect_gone) then
    dump('AFTER', result.diagnostics)
    phase = 'done'
    vim.schedule(function() vim.lsp.stop_client(ctx.client_id); vim.cmd('qall!') end)
  end
end

vim.api.nvim_create_autocmd('VimEnter', { callback = function()
  local cmd = vim.split(os.getenv('SERVER_CMD'), ' ')
  local id = vim.lsp.start_client({ name = 'oscova', cmd = cmd, root_dir = os.getenv('ROOT'),
    handlers = { ['textDocument/publishDiagnostics'] = on_diags } })
  vim.lsp.buf_attach_client(0, id)
end })
