// The content trust a server's prompts/get and resources/read are judged with comes from its
// accepted tool definitions: a new or changed definition, hidden until `pin --accept`, can make
// it more cautious but never less. Real stdio upstream, restarted with other definitions between
// two gateway starts over one lock file.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RiskPolicy } from '@toolfence/tools';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  defsTool,
  firstText,
  readClient,
  readDefsServer,
  startReadGateway,
} from './fixtures/read-gateway.js';

let folder: string;
const open: { close(): Promise<void> }[] = [];

beforeEach(async () => {
  folder = await mkdtemp(join(tmpdir(), 'toolfence-read-trust-'));
});
afterEach(async () => {
  for (const item of open.splice(0).reverse()) await item.close().catch(() => undefined);
  await rm(folder, { recursive: true, force: true });
});

/**
 * One gateway start over the web server offering `tools`; what its reads are answered: the read
 * text, or the refusal's message.
 */
async function readsWith(
  tools: Record<string, unknown>[],
  policy: RiskPolicy,
): Promise<{ hidden: string[]; resource: string; prompt: string }> {
  const gateway = await startReadGateway(
    folder,
    {
      web: readDefsServer(folder, 'web', {
        tools,
        prompts: [{ name: 'summarise', description: 'Summarise the inbox' }],
        resources: [{ name: 'inbox', uri: 'web://inbox/latest' }],
      }),
    },
    { authorizer: policy },
  );
  open.push(gateway);
  const client = await readClient(gateway);
  open.push(client);
  const answer = (read: Promise<unknown>) =>
    read.then(
      (result) =>
        'contents' in (result as object)
          ? firstText(result as { contents: unknown[] })
          : 'prompt served',
      (error: Error) => error.message,
    );
  const result = {
    hidden: Object.keys(gateway.upstreams.find((item) => item.name === 'web')?.hidden ?? {}),
    resource: await answer(client.readResource({ uri: 'web://inbox/latest' })),
    prompt: await answer(client.getPrompt({ name: 'web__summarise' })),
  };
  await client.close();
  await gateway.close();
  return result;
}

describe("a hidden tool definition never lowers the content trust of the server's reads", () => {
  // Reads of prompt-injection-prone content are denied; anything up to untrusted is allowed.
  const denyInjectionProne = () =>
    new RiskPolicy({ contentTrust: { allowUpTo: 'untrusted', askUpTo: 'sensitive' } });

  it('keeps the pinned trust while a changed definition that declares a lower one is hidden', async () => {
    const pinned = await readsWith(
      [defsTool('fetch_page', 'prompt-injection-prone')],
      denyInjectionProne(),
    );
    expect(pinned.hidden).toEqual([]);
    expect(pinned.resource).toMatch(/denied .*prompt-injection-prone/);
    expect(pinned.prompt).toMatch(/denied .*prompt-injection-prone/);

    const changed = await readsWith([defsTool('fetch_page', 'trusted')], denyInjectionProne());
    expect(changed.hidden).toEqual(['fetch_page']);
    expect(changed.resource).toMatch(/denied .*prompt-injection-prone/);
    expect(changed.prompt).toMatch(/denied .*prompt-injection-prone/);
  }, 60_000);

  it('does not take the trust a new, hidden tool declares when no accepted one declares any', async () => {
    // Only trusted content is read without asking; this client cannot be asked.
    const onlyTrusted = () =>
      new RiskPolicy({ contentTrust: { allowUpTo: 'trusted', askUpTo: 'trusted' } });
    const first = await readsWith([defsTool('search')], onlyTrusted());
    expect(first.resource).toMatch(/denied .*untrusted/);

    const added = await readsWith(
      [defsTool('search'), defsTool('fetch_page', 'trusted')],
      onlyTrusted(),
    );
    expect(added.hidden).toEqual(['fetch_page']);
    expect(added.resource).toMatch(/denied .*untrusted/);
    expect(added.prompt).toMatch(/denied .*untrusted/);
  }, 60_000);

  it('takes the more cautious trust a hidden definition declares', async () => {
    const pinned = await readsWith([defsTool('fetch_page', 'trusted')], denyInjectionProne());
    expect(pinned.resource).toBe('content of web://inbox/latest');
    expect(pinned.prompt).toBe('prompt served');

    const changed = await readsWith(
      [defsTool('fetch_page', 'prompt-injection-prone')],
      denyInjectionProne(),
    );
    expect(changed.hidden).toEqual(['fetch_page']);
    expect(changed.resource).toMatch(/denied .*prompt-injection-prone/);
  }, 60_000);
});
