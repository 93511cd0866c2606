import { describe, expect, it } from 'vitest';
import { ConsoleSessions, sameSecret } from './console-sessions.js';

const TOKEN = 'a-sign-in-token-of-32-characters';

describe('ConsoleSessions', () => {
  it('signs in only with the token; the session id and CSRF token are random and not the token', () => {
    const sessions = new ConsoleSessions(TOKEN, 4, 1_000);
    expect(sessions.signIn('wrong')).toBeUndefined();
    expect(sessions.signIn(`${TOKEN}x`)).toBeUndefined();
    const session = sessions.signIn(TOKEN);
    expect(session?.id).not.toContain(TOKEN);
    expect(session?.csrf).not.toBe(session?.id);
    expect(sessions.find(session?.id)).toBe(session);
    expect(sessions.find('made-up')).toBeUndefined();
  });

  it('holds at most maxSessions: the least recently used is dropped', () => {
    const sessions = new ConsoleSessions(TOKEN, 2, 60_000);
    const a = sessions.signIn(TOKEN, 1);
    const b = sessions.signIn(TOKEN, 2);
    sessions.find(a?.id, 3);
    const c = sessions.signIn(TOKEN, 4);
    expect(sessions.find(b?.id, 5)).toBeUndefined();
    expect(sessions.find(a?.id, 5)).toBeDefined();
    expect(sessions.find(c?.id, 5)).toBeDefined();
  });

  it('ends a session unused for sessionIdleMs, and on sign-out', () => {
    const sessions = new ConsoleSessions(TOKEN, 4, 1_000);
    const a = sessions.signIn(TOKEN, 0);
    expect(sessions.find(a?.id, 999)).toBeDefined();
    expect(sessions.find(a?.id, 1_999)).toBeUndefined();
    const b = sessions.signIn(TOKEN, 0);
    sessions.signOut(b?.id as string);
    expect(sessions.find(b?.id, 1)).toBeUndefined();
  });

  it('compares secrets of any length without throwing', () => {
    expect(sameSecret('abc', 'abc')).toBe(true);
    expect(sameSecret('abc', 'abcd')).toBe(false);
    expect(sameSecret('', 'abc')).toBe(false);
  });
});
