// The client API's application-profile operations: apps.list (the profiles the user may view,
// and which of them they may use) and apps.show (one profile's values). A profile the user may
// not view is answered as one that does not exist.

import type { RequestOf } from '../../api/protocol.js';
import type { AppDetail, AppList } from '../../api/responses.js';
import { profileNotDefinedReason, resolveProfile } from '../../model/profiles.js';
import { mayViewProfile } from '../../model/rbac.js';
import type { ApiContext } from './context.js';
import { ApiFailure } from './errors.js';
import { allowed, readConfig } from './steps.js';
import { appDetail, appSummary } from './views.js';

export async function listApps(ctx: ApiContext, user: string, req: RequestOf<'apps.list'>): Promise<AppList> {
  const config = await readConfig(ctx, req);
  const apps = [...config.profiles.values()]
    .filter((p) => allowed(config, user, 'app:view', { type: 'app', value: p.name }))
    .map((p) => appSummary(p, config, allowed(config, user, 'app:use', { type: 'app', value: p.name })));
  // Only profiles the user may view are listed; the default is named only when it is one of them.
  const def = config.cluster.defaultApplication;
  return { apps, defaultApplication: mayViewProfile(config, user, def) ? def : null };
}

export async function showApp(ctx: ApiContext, user: string, req: RequestOf<'apps.show'>): Promise<AppDetail> {
  const config = await readConfig(ctx, req);
  const r = resolveProfile(config, req.args.name);
  // A profile the user may not view is answered as one that does not exist, by the name asked
  // for: the answer tells neither whether it exists nor, for an alias, its target.
  if (r === null || !mayViewProfile(config, user, req.args.name))
    throw new ApiFailure('not-found', profileNotDefinedReason(req.args.name));
  const p = r.profile;
  return appDetail(p, r.recordedAs, config, allowed(config, user, 'app:use', { type: 'app', value: p.name }));
}
