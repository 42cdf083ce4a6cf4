// When the client renews its access token (issue 19: short-lived tokens with a refresh path). The
// token's own claims say when it was issued and when it expires (read, not verified: the
// controllers verify it); it is renewed with the refresh token of `xcecli login` once less than a
// quarter of its life, and at most TOKEN_REFRESH_MARGIN_MS, is left, and again when a controller
// answers that it expired (a clock apart from the controllers').

/** Renew at most this long before the access token expires. */
export const TOKEN_REFRESH_MARGIN_MS = 60_000;

/** A JWT's `iat` and `exp` in ms, or null when the token is not a JWT with both. */
export function tokenTimes(token: string): { issuedAt_ms: number; expiresAt_ms: number } | null {
  const payload = token.split('.')[1];
  if (payload === undefined) return null;
  try {
    const claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as { iat?: unknown; exp?: unknown };
    if (typeof claims.iat !== 'number' || typeof claims.exp !== 'number') return null;
    return { issuedAt_ms: claims.iat * 1000, expiresAt_ms: claims.exp * 1000 };
  } catch {
    return null;
  }
}

/** True when `token` expires within its margin of `now_ms` (a token of unknown times: never). */
export function nearExpiry(token: string, now_ms: number): boolean {
  const t = tokenTimes(token);
  if (t === null) return false;
  const margin_ms = Math.min(TOKEN_REFRESH_MARGIN_MS, (t.expiresAt_ms - t.issuedAt_ms) / 4);
  return t.expiresAt_ms - now_ms <= margin_ms;
}

/** An answer meaning the access token expired (the controller's AuthError `expired-token`). */
export function isExpiredTokenAnswer(code: string, message: string): boolean {
  return code === 'unauthenticated' && message.startsWith('token expired');
}
