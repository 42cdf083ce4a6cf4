// The package's exported API (the brief's libxce): a typed client that submits, lists, shows and
// watches jobs over the controllers' WebSocket API, following the leader through failovers.
//
//   import { XceClient } from 'xce';
//   const c = new XceClient({ controllers: ['ctl1:7101', 'ctl2:7101', 'ctl3:7101'] });
//   await c.login('alice', password);
//   const { jobId } = await c.submit({ app: 'python', command: ['echo', 'hello'] });
//   for await (const d of c.watch(jobId)) console.log(d.state, d.pendReason);
//
// Every operation is typed by its name, without casts: `c.call('jobs.list', { state: 'RUN' })`
// resolves with a JobList, `c.call('jobs.submit', { job })` with a SubmitResult (api/responses.ts).

export { XceClient, ApiError, toWsUrl, type ClientOptions, type Stall } from './client.js';
export type { JobSpec, Op, OpArgs, Request, Response, ApiErrorBody, ErrorCode, Session } from '../api/protocol.js';
export { OPS, WRITE_OPS, API_FRAME_BYTES_MAX } from '../api/protocol.js';
export type {
  CallResult,
  Operations,
  AppDetail,
  AppList,
  AppSummary,
  ClusterMember,
  ClusterStatus,
  ConfigUpgradeResult,
  ControlResult,
  DispatchRecordView,
  DryRunResult,
  JobDetails,
  JobList,
  JobSummary,
  LoginResult,
  MembershipResult,
  OpResult,
  OpResults,
  ProfileView,
  ResReqTerm,
  RoleChangeResult,
  RoleList,
  SubmitResult,
  TransferResult,
} from '../api/responses.js';

// Presets, expanded exactly as xcecli does (site preset, the user's of the same name, later
// presets, then the job's own values), so that a portal submits identical values.
export {
  expandPresets,
  presetLayers,
  originLabel,
  PresetError,
  SCALAR_OPTIONS,
  type Expansion,
  type OriginRow,
  type PresetLayer,
  type ValueOrigin,
} from '../model/preset-expand.js';
export { parsePresetFile, presetHash, presetLabel, type PresetFileResult } from '../model/presets.js';
export type { JobValues, Preset, PresetSource } from '../model/preset-schema.js';
export type { SitePresetDetail, SitePresetList, SitePresetSummary } from '../api/responses.js';
