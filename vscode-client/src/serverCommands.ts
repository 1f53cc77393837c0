/** The server's commands the extension calls (`workspace/executeCommand`): one name each. Pure. */
export const SERVER_COMMANDS = {
  runAgent: 'oscova.runAgent',
  previewPrompt: 'oscova.previewPrompt',
  cancelRun: 'oscova.cancelRun',
  listAgents: 'oscova.listAgents',
  compareRuns: 'oscova.compareRuns',
  saveTestCase: 'oscova.saveTestCase',
  review: 'oscova.review',
} as const;
