// The client API's site-preset operations: presets.list and presets.get. Site presets are files an
// admin deploys beside the cluster configuration (presets/*.yaml); they ride in the ConfigFact, so
// every controller serves the same version, read-only. Nothing here touches a job: the client
// expands presets into plain job values (model/preset-expand.ts) and submits those.
//
// Any logged-in user may read them (a preset carries no privilege), except a preset whose `app:`
// names a profile the user may not view: it is left out of the list and answered as not defined,
// so presets tell no more about profiles than `apps.list` does.

import type { RequestOf } from '../../api/protocol.js';
import type { SitePresetDetail, SitePresetList, SitePresetSummary } from '../../api/responses.js';
import type { ClusterConfig } from '../../model/config-types.js';
import type { SitePreset } from '../../model/preset-schema.js';
import { presetLabel } from '../../model/presets.js';
import { mayViewProfile } from '../../model/rbac.js';
import type { ApiContext } from './context.js';
import { ApiFailure } from './errors.js';
import { readConfig } from './steps.js';

function visible(config: ClusterConfig, user: string, p: SitePreset): boolean {
  const app = p.preset.values.app;
  return app === undefined || mayViewProfile(config, user, app);
}

function summary(p: SitePreset): SitePresetSummary {
  return {
    name: p.preset.name,
    label: presetLabel(p.preset.name, p.hash),
    hash: p.hash,
    description: p.preset.description,
    app: p.preset.values.app ?? null,
    file: p.file,
  };
}

export async function listPresets(
  ctx: ApiContext,
  user: string,
  req: RequestOf<'presets.list'>,
): Promise<SitePresetList> {
  const config = await readConfig(ctx, req);
  const presets = [...config.presets.values()].filter((p) => visible(config, user, p)).map(summary);
  presets.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return { presets };
}

export async function getPreset(
  ctx: ApiContext,
  user: string,
  req: RequestOf<'presets.get'>,
): Promise<SitePresetDetail> {
  const config = await readConfig(ctx, req);
  const p = config.presets.get(req.args.name);
  if (p === undefined || !visible(config, user, p))
    throw new ApiFailure('not-found', `site preset ${req.args.name} is not defined`);
  return { ...summary(p), values: p.preset.values, text: p.text };
}
