// The client API's authentication: the token check every request but `login` goes through (a
// token is good only while its user is in users.yaml), `login` behind the login gate (rate limits,
// password checks off the event loop), and `token.issue` (an admin's token for another user).

import type { OpArgs, Request } from '../../api/protocol.js';
import type { Session } from '../../api/protocol.js';
import type { LoginResult, TokenRevokeResult } from '../../api/responses.js';
import { formatDuration } from '../../model/units.js';
import { AuthError, TOKEN_TTL_S_DEFAULT, TOKEN_TTL_S_MAX } from '../auth.js';
import { LoginGate, LoginRateLimitedError } from '../login-gate.js';
import { sharedPasswordPool } from '../password-pool.js';
import type { ApiContext } from './context.js';
import { ApiFailure } from './errors.js';
import { check, requireConfig, write } from './steps.js';

/** The user the request's token names; throws AuthError when it names none, or one no longer in users.yaml. */
export async function authenticate(ctx: ApiContext, req: Request): Promise<string> {
  const { user, jti } = await ctx.tokens.verify(req.token);
  // Revoked (`xceadmin token revoke`, a replicated fact): refused on every controller once applied.
  if (ctx.node.state.revokedTokens.has(jti))
    throw new AuthError(
      'revoked-token',
      'this token was revoked by an administrator: log in again with `xcecli login`',
    );
  // A token is good only while its user is in the configuration in force: deleting a user from
  // users.yaml ends their tokens at once, not when they expire (up to TOKEN_TTL_S_MAX later).
  if (!(ctx.config() ?? ctx.bootstrapConfig).users.has(user)) {
    throw new AuthError('bad-token', `the token's user ${user} is no longer in users.yaml: log in as an existing user`);
  }
  return user;
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
    const token = await ctx.tokens.issue(args.user, TOKEN_TTL_S_DEFAULT);
    return { token, user: args.user, expiresIn_s: TOKEN_TTL_S_DEFAULT };
  }
}

/** `token.issue`: an admin issues a token for a user of users.yaml, up to TOKEN_TTL_S_MAX. */
export async function issueToken(ctx: ApiContext, user: string, args: OpArgs<'token.issue'>): Promise<LoginResult> {
  const config = requireConfig(ctx);
  check(config, user, 'cluster:admin');
  if (!config.users.has(args.user)) throw new ApiFailure('rejected', `user ${args.user} is not in users.yaml`);
  const ttl = args.ttl_s ?? TOKEN_TTL_S_DEFAULT;
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
