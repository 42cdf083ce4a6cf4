// Site presets as a client reads them: `presets.list` and `presets.get` on the controllers
// (daemon/api/presets.ts), turned into the model's Preset so the expansion treats them like a
// user's.

import type { SitePresetDetail, SitePresetList } from '../../api/responses.js';
import type { Preset } from '../../model/presets.js';
import { ApiError } from '../api-error.js';
import type { XceClient } from '../client.js';

export async function listSitePresets(c: XceClient, stale = false): Promise<SitePresetList> {
  return await c.call('presets.list', {}, { stale });
}

/** The site preset NAME, or null when the cluster serves none by that name (to this user). */
export async function getSitePreset(c: XceClient, name: string, stale = false): Promise<SitePresetDetail | null> {
  try {
    return await c.call('presets.get', { name }, { stale });
  } catch (e) {
    if (e instanceof ApiError && e.code === 'not-found') return null;
    throw e;
  }
}

export function sitePresetOf(d: SitePresetDetail): Preset {
  return { name: d.name, description: d.description, values: d.values };
}
