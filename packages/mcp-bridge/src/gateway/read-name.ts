// The name the gateway's policy judges a read by, on its server: `prompt:<name>` for prompts/get,
// `resource:<canonical uri>` for resources/read (a tool's own name, for reads). One place for the
// form, read by the pass-through (which judges reads) and the policy file (which does not warn
// about a rule that names reads: they are not offered tools).

const PROMPT = 'prompt:';
const RESOURCE = 'resource:';

/** The read name of prompt `name`. */
export function promptReadName(name: string): string {
  return `${PROMPT}${name}`;
}

/** The read name of the resource at `uri` (its canonical form). */
export function resourceReadName(uri: string): string {
  return `${RESOURCE}${uri}`;
}

/** True when `own` (a name on a server, or a glob of one) names reads rather than tools. */
export function isReadName(own: string): boolean {
  return own.startsWith(PROMPT) || own.startsWith(RESOURCE);
}
