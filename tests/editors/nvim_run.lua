-- Neovim 0.7 headless: start oscova-lsp ($SERVER_CMD) for the buffer $TARGET, run the agent $AGENT_ID with
-- $RUN_INPUT through workspace/executeCommand, print every oscova/runEvent and the result, then quit.
local deadline = tonumber(os.getenv('DEADLINE_MS') or '30000')
vim.defer_fn(function() io.stderr:write('TIMEOUT\n'); vim.cmd('cquit 2') end, deadline)

local function out(line)
  io.stdout:write(line .. '\n')
  io.stdout:flush()
end

local function on_run_event(err, event, ctx)
  out(('EVENT %s %d %s %s'):format(event.runId, event.seq, event.kind, vim.json.encode(event.text or vim.NIL)))
end

local function on_result(err, result, ctx)
  if err then
    out('ERROR ' .. vim.inspect(err))
  else
    out(('RESULT %s %s %s'):format(result.runId, result.status, vim.json.encode(result.text)))
  end
  vim.schedule(function() vim.lsp.stop_client(ctx.client_id); vim.cmd('qall!') end)
end

vim.api.nvim_create_autocmd('VimEnter', { callback = function()
  local cmd = vim.split(os.getenv('SERVER_CMD'), ' ')
  local bufnr = vim.api.nvim_get_current_buf()
  local id = vim.lsp.start_client({
    name = 'oscova', cmd = cmd, root_dir = os.getenv('ROOT'),
    handlers = { ['oscova/runEvent'] = on_run_event },
    on_init = function(client)
      client.request('workspace/executeCommand', {
        command = 'oscova.runAgent',
        arguments = { { agentId = os.getenv('AGENT_ID'), input = os.getenv('RUN_INPUT'),
                        uri = vim.uri_from_bufnr(bufnr) } },
      }, on_result, bufnr)
    end,
  })
  vim.lsp.buf_attach_client(bufnr, id)
end })
