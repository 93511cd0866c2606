/** Exit codes of `toolfence-mcp`. */
export const EXIT_CODES: Readonly<{ ok: 0; failure: 1; usage: 2 }> = Object.freeze({
  ok: 0,
  failure: 1,
  usage: 2,
});
