// The client API's authentication: the token check every request but `login` and `auth.refresh`
// goes through (a token is good only while its user is in users.yaml and it is not revoked; the
// user's roles are read from rbac.yaml at each request, so a role change takes effect at once),
// `login` behind the login gate (rate limits, password checks off the event loop) answering a
// short-lived access token (xce.yaml `token_lifetime`) and a refresh token
// (`refresh_token_lifetime`), `auth.refresh` (a new access token for a refresh token not revoked),
// `token.issue` (an admin's token for another user) and `token.revoke`.

import type { OpArgs, Request } from '../../api/protocol.js';
import type { Session } from '../../api/protocol.js';
import type { LoginResult, TokenRevokeResult } from '../../api/responses.js';
import { formatDuration } from '../../model/units.js';
import type { ClusterConfig } from '../../model/config-types.js';
import { AuthError, TOKEN_TTL_S_MAX, type TokenClaims } from '../auth.js';
import { LoginGate, LoginRateLimitedError } from '../login-gate.js';
import { sharedPasswordPool } from '../password-pool.js';
import type { ApiContext } from './context.js';
import { ApiFailure } from './errors.js';
import { check, requireConfig, write } from './steps.js';

/** The user the request's token names; throws AuthError when it names none, or one no longer in users.yaml. */
export async function authenticate(ctx: ApiContext, req: Request): Promise<string> {
  const claims = await ctx.tokens.verify(req.token);
  if (claims.refresh)
    throw new AuthError(
      'bad-token',
      'this is a refresh token: it only gets new access tokens (auth.refresh); send the access token instead',
    );
  return standing(ctx, claims, 'token');
}

/**
 * The user of a verified token still in good standing: not revoked (`xceadmin token revoke`, a
 * replicated fact: refused on every controller once applied) and still in users.yaml (deleting a
 * user ends their tokens at once, not when they expire).
 */
function standing(ctx: ApiContext, claims: TokenClaims, what: 'token' | 'refresh token'): string {
  if (ctx.node.state.revokedTokens.has(claims.jti))
    throw new AuthError(
      'revoked-token',
      `this ${what} was revoked by an administrator: log in again with \`xcecli login\``,
    );
  if (!configInForce(ctx).users.has(claims.user)) {
    throw new AuthError(
      'bad-token',
      `the ${what}'s user ${claims.user} is no longer in users.yaml: log in as an existing user`,
    );
  }
  return claims.user;
}

function configInForce(ctx: ApiContext): ClusterConfig {
  return ctx.config() ?? ctx.bootstrapConfig;
}

/** An access token for `user` of the configured lifetime (xce.yaml `token_lifetime`). */
async function accessToken(ctx: ApiContext, user: string): Promise<LoginResult> {
  const ttl_s = Math.max(1, Math.floor(configInForce(ctx).cluster.tokenLifetimeMs / 1000));
  return { token: await ctx.tokens.issue(user, ttl_s), user, expiresIn_s: ttl_s };
}

/** `auth.refresh`: a new access token for a refresh token that is not expired, not revoked, of a user still there. */
export async function refreshToken(ctx: ApiContext, args: OpArgs<'auth.refresh'>): Promise<LoginResult> {
  let claims: TokenClaims;
  try {
    claims = await ctx.tokens.verify(args.refreshToken);
  } catch (err) {
    if (err instanceof AuthError && err.code === 'expired-token')
      throw new AuthError('expired-token', 'the refresh token expired: log in again with `xcecli login`');
    throw err;
  }
  if (!claims.refresh)
    throw new AuthError('bad-token', 'this is an access token, not a refresh token: give the refresh token of a login');
  return accessToken(ctx, standing(ctx, claims, 'refresh token'));
}

/** `login`: one per API server, holding the login gate's rate limits (made on first use). */
export class Logins {
  private gate: LoginGate | null = null;

  constructor(private readonly ctx: ApiContext) {}

  /** `address`: the client's, for the gate's per-address limit; null when not known. */
  async login(args: OpArgs<'login'>, address: string | null): Promise<LoginResult> {
    const ctx = this.ctx;
    const config = ctx.config() ?? ctx.bootstrapConfig;
    this.gate ??= new LoginGate(sharedPasswordPool(), ctx.now);
    try {
      // Per user name, and per client address when the request came over a socket.
      await this.gate.check(config.users, args.user, args.password, address);
    } catch (err) {
      // Retryable: the client library waits retryAfter_ms and sends the login again.
      if (err instanceof LoginRateLimitedError)
        throw new ApiFailure('rate-limited', err.message, undefined, err.retryAfter_ms);
      throw err;
    }
    const access = await accessToken(ctx, args.user);
    const refreshTtl_s = Math.max(1, Math.floor(config.cluster.refreshTokenLifetimeMs / 1000));
    const refresh = await ctx.tokens.issue(args.user, refreshTtl_s, 'refresh');
    return { ...access, refreshToken: refresh, refreshExpiresIn_s: refreshTtl_s };
  }
}

/** `token.issue`: an admin issues an access token for a user of users.yaml (default `token_lifetime`), up to TOKEN_TTL_S_MAX. */
export async function issueToken(ctx: ApiContext, user: string, args: OpArgs<'token.issue'>): Promise<LoginResult> {
  const config = requireConfig(ctx);
  check(config, user, 'cluster:admin');
  if (!config.users.has(args.user)) throw new ApiFailure('rejected', `user ${args.user} is not in users.yaml`);
  const ttl = args.ttl_s ?? Math.max(1, Math.floor(config.cluster.tokenLifetimeMs / 1000));
  if (ttl > TOKEN_TTL_S_MAX)
    throw new ApiFailure(
      'bad-request',
      `ttl_s ${ttl} is longer than the maximum token lifetime, ${TOKEN_TTL_S_MAX} s (${formatDuration(TOKEN_TTL_S_MAX)})`,
    );
  return { token: await ctx.tokens.issue(args.user, ttl), user: args.user, expiresIn_s: ttl };
}

/** `token.revoke`: an admin revokes a token (given whole, or by its jti) on every controller until it expires. */
export async function revokeToken(
  ctx: ApiContext,
  user: string,
  session: Session | undefined,
  args: OpArgs<'token.revoke'>,
): Promise<TokenRevokeResult> {
  check(requireConfig(ctx), user, 'cluster:admin');
  let jti: string;
  let untilMs: number;
  if (args.token !== undefined) {
    const claims = await ctx.tokens.verify(args.token);
    if (claims.jti === '')
      throw new ApiFailure('rejected', 'the token has no jti: it cannot be revoked (it expires on its own)');
    jti = claims.jti;
    untilMs = claims.expiresAt * 1000;
  } else if (args.jti !== undefined) {
    jti = args.jti;
    // A jti alone: held for the longest a token can live.
    untilMs = ctx.now() + TOKEN_TTL_S_MAX * 1000;
  } else throw new ApiFailure('bad-request', 'give the token to revoke, or its jti');
  await write(ctx, session, { kind: 'credential', action: 'revokeToken', name: jti, untilMs, user });
  return { jti, revokedUntil_ms: untilMs };
}
