# The controller's replicated facts (the Raft log's entries) and its snapshot.
#
# Every state change of the controller is one `Fact`, encoded once on the leader, carried as
# opaque bytes through Raft and the WAL, and decoded once per apply (statemachine/facts-codec.ts,
# a hand-written codec that reads and writes exactly this layout; its tests compare it with
# capnp-es and with `capnp decode`).
#
# EVOLUTION IS ADDITIVE ONLY: never renumber, retype or remove a field; add new ones at the end of
# a struct. A record written before a field existed decodes with the field at its default, and that
# default must mean the old behaviour. For application profiles: no profile, mode `direct`.
# schema/fixtures/facts-v0.capnp is the first released encoding (before profiles); its bytes are
# committed under schema/fixtures/ and must keep decoding.

@0x978d78ab998cfec6;

enum ExecMode {
  direct @0;
}

enum LaunchType {
  serial @0;
  openmpi @1;
  mpich @2;
}

# Where a value of the effective job came from. `job` is the default so that an old record, which
# has no profile, reads as the job's own values.
enum Origin {
  job @0;
  profile @1;
}

enum JobState {
  pend @0;
  run @1;
  done @2;
  exit @3;
  susp @4;                   # (added with suspend) a running job stopped by SIGSTOP; it keeps its slots
}

struct EnvVar {
  name @0 :Text;
  value @1 :Text;
}

# Limits in canonical units. 0 means "not set": every limit is positive when set.
struct Limits {
  runtimeS @0 :UInt64;
  memoryBytes @1 :UInt64;
  cpuS @2 :UInt64;
  tasks @3 :UInt32;
}

# The job's OWN values as the user submitted them (after the client expanded presets); never the
# values merged with the profile. A null Text means "not given".
struct JobSpec {
  resreq @0 :Text;
  tasks @1 :UInt32;          # 0: not given (the profile's min, else 1)
  env @2 :List(EnvVar);      # sorted by name
  limits @3 :Limits;
  preExec @4 :Text;
  postExec @5 :Text;
  command @6 :List(Text);    # argv
  cwd @7 :Text;
  stdoutPath @8 :Text;
  stderrPath @9 :Text;
  jobName @10 :Text;
  script @11 :Text;          # the job script as submitted (`xcecli jobs submit job.sh`), at most 1 MiB; null: a command
}

# ---- facts ----

struct Fact {
  clientId @0 :Text;         # null for the leader's own facts (dispatch, status, no-op)
  sequence @1 :UInt64;       # the client's request number; a retry carries the same one
  timeMs @2 :Int64;          # the leader's clock when it proposed the fact, ms since the epoch
  union {
    noop @3 :Void;
    config @4 :ConfigFact;
    submit @5 :SubmitFact;
    dispatch @6 :DispatchFact;
    jobStatus @7 :JobStatusFact;
    jobControl @8 :JobControlFact;
    hostRegistered @9 :RegisteredHost;
    clean @10 :CleanFact;
    modify @11 :ModifyFact;  # (added with job modify, `bmod`)
    hostControl @12 :HostControlFact;
    credential @13 :CredentialFact;  # (added with issue 19) host enrolment and revocation, token revocation
    batch @14 :BatchFact;  # (added with issue 14) a scheduler pass's dispatches, a flush of statuses
  }
}

# Several of the leader's own facts in one log entry (issue 14): the dispatch decisions of one
# scheduler pass, the workers' statuses of one flush. Applied in order, each dispatch and then each
# status exactly as its single fact would be; never with a client session.
struct BatchFact {
  dispatches @0 :List(DispatchFact);
  statuses @1 :List(JobStatusFact);
}

struct ConfigFile {
  path @0 :Text;
  text @1 :Text;
}

# A whole cluster configuration, as its source files; apply validates it (statemachine/config.ts).
struct ConfigFact {
  files @0 :List(ConfigFile);
  user @1 :Text;             # the admin who proposed it (audit)
}

struct SubmitFact {
  user @0 :Text;
  queue @1 :Text;
  spec @2 :JobSpec;
  profile @3 :Text;          # (added with profiles; null in v0: no profile) as recorded: an alias's target, or the default's name
  profileRequested @4 :Text; # as the user gave it; null when the user named none
  dependency @5 :Text;       # (added with dependencies) `-w` as the user wrote it; null: none
  dependencyKill @6 :Bool;   # `--dep-never kill`: a dependency that can never be met kills the job (false: it pends)
}

struct HostTasks {
  host @0 :Text;
  tasks @1 :UInt32;
}

struct DispatchFact {
  jobId @0 :UInt64;
  runNumber @1 :UInt32;      # the run this dispatch starts: the job's previous run number + 1
  placement @2 :List(HostTasks);
  record @3 :DispatchRecord; # (added with profiles) null in v0 records: no profile, mode direct
  schedulerHash @4 :Text;    # the profile hash the scheduler merged with; null: skip the check
}

enum CredentialAction {
  revokeHost @0;   # the host's credential is refused until it is enrolled again
  enrollHost @1;   # a revoked host moves to the next epoch (a new credential); otherwise nothing changes
  revokeToken @2;  # a user token (by its jti) is refused until it expires
}

# Who may speak for whom: replicated, so that every controller refuses a revoked host or token at once.
struct CredentialFact {
  untilMs @0 :Int64;               # revokeToken: the token's expiry (its entry is dropped after it); 0 otherwise
  action @1 :CredentialAction;
  name @2 :Text;                   # the host name, or the token's jti
  user @3 :Text;                   # the admin who asked (audit)
}

# ---- the frozen dispatch record ----

enum CmpOp {
  gt @0;
  ge @1;
  lt @2;
  le @3;
  eq @4;
  ne @5;
}

struct SelectExpr {
  union {
    bool @0 :Text;
    cmp @1 :SelectCmp;
    not @2 :SelectExpr;
    and @3 :List(SelectExpr);
    or @4 :List(SelectExpr);
  }
}

struct SelectCmp {
  name @0 :Text;
  op @1 :CmpOp;
  isString @2 :Bool;
  number @3 :Float64;
  string @4 :Text;
}

struct SelectTerm {
  expr @0 :SelectExpr;
  origin @1 :Origin;
}

struct RusageTerm {
  name @0 :Text;
  value @1 :Float64;
  hasDuration @2 :Bool;
  durationS @3 :Float64;
  origin @4 :Origin;
}

struct SpanTerm {
  ptile @0 :UInt32;          # 0: not set
  hosts @1 :UInt32;          # 0: not set
  origin @2 :Origin;
}

struct SameTerm {
  names @0 :List(Text);
  origin @1 :Origin;
}

struct OrderKey {
  name @0 :Text;
  descending @1 :Bool;
}

struct OrderTerm {
  keys @0 :List(OrderKey);
  origin @1 :Origin;
}

struct EffectiveResReq {
  select @0 :List(SelectTerm);
  rusage @1 :List(RusageTerm);
  span @2 :SpanTerm;         # null: not set
  same @3 :SameTerm;         # null: not set
  order @4 :OrderTerm;       # null: not set
  compound @5 :CompoundResReq; # a job's compound requirement under a profile that sets no terms
}

# `{...} + {...}` or `... || ...` kept as the job wrote it; each part's origins read `job`.
struct CompoundResReq {
  parts @0 :List(EffectiveResReq);
  operator @1 :Text;         # "+" or "||"
}

struct EnvTerm {
  name @0 :Text;
  value @1 :Text;
  origin @2 :Origin;
}

enum LimitKind {
  runtimeS @0;
  memoryBytes @1;
  cpuS @2;
  tasks @3;
}

struct LimitTerm {
  kind @0 :LimitKind;
  value @1 :Float64;
  origin @2 :Origin;
}

struct DispatchRecord {
  profile @0 :Text;          # the resolved profile name; null: no profile (old records)
  profileHash @1 :Text;      # hex content hash of the profile the record was built from
  mode @2 :ExecMode;
  launchType @3 :LaunchType;
  resreq @4 :EffectiveResReq;
  tasks @5 :UInt32;
  hosts @6 :List(HostTasks);
  env @7 :List(EnvTerm);
  limits @8 :List(LimitTerm);
  profilePreExec @9 :Text;
  profilePostExec @10 :Text;
  jobPreExec @11 :Text;
  jobPostExec @12 :Text;
}

# ---- job status and control ----

struct JobStarted {
  pid @0 :UInt32;
  timeMs @1 :Int64;          # when the worker started it; 0: the fact's time
}

struct JobFinished {
  exitCode @0 :Int32;
  signal @1 :Text;           # e.g. SIGKILL; null when it exited
  reason @2 :Text;
  timeMs @3 :Int64;          # 0: the fact's time
}

struct JobLaunchError {
  reason @0 :Text;
}

struct JobStatusFact {
  jobId @0 :UInt64;
  runNumber @1 :UInt32;      # the run the worker reports on; a report on another run is ignored
  union {
    started @2 :JobStarted;
    finished @3 :JobFinished;
    launchError @4 :JobLaunchError;
    suspended @5 :JobSignalled;  # (added with suspend) the worker stopped the job's process group
    resumed @6 :JobSignalled;    # the worker continued it
  }
}

struct JobSignalled {
  timeMs @0 :Int64;          # when the worker signalled it; 0: the fact's time
}

enum ControlAction {
  kill @0;
  requeue @1;
  restart @2;
  hold @3;                   # (added with hold/release) a pending job is not scheduled until released
  release @4;
  suspend @5;                # (added with suspend/resume) a running job: SIGSTOP by its worker, state SUSP
  resume @6;
  dependencyNever @7;        # the leader's: a pending job whose dependency can never be met, under --dep-never kill
}

struct JobControlFact {
  jobId @0 :UInt64;
  action @1 :ControlAction;
  user @2 :Text;             # who asked (RBAC is re-checked in apply)
}

# A change of a pending job's values (`xcecli jobs modify`, LSF `bmod`): the whole new values, as
# the leader admitted them; apply admits them again (statemachine/admission.ts) before replacing
# the job's, and records the change (who, when, what) in the job's events.
struct ModifyFact {
  jobId @0 :UInt64;
  user @1 :Text;             # who asked (RBAC re-checked in apply)
  queue @2 :Text;
  profile @3 :Text;          # as recorded (an alias's target)
  profileRequested @4 :Text;
  spec @5 :JobSpec;
}

# Something done to a job that is not a run: hold, release, suspend, resume (asked for, and what
# the worker did), modify. Kept in the job (at most JOB_EVENTS_MAX, the oldest dropped first).
struct JobEvent {
  action @0 :Text;           # hold | release | suspend | resume | suspended | resumed | modify
  user @1 :Text;             # who asked; null for a worker's report
  timeMs @2 :Int64;
  detail @3 :Text;           # e.g. what a modify changed, or the host; null when nothing to add
}

# ---- a worker's registration ----

# What a host's worker (xcecd) says its host has, as the leader accepted it at registration. The
# scheduler and apply use the smaller of this and hosts.yaml (statemachine/host-capacity.ts).
struct RegisteredHost {
  host @0 :Text;
  slots @1 :UInt32;
  memBytes @2 :UInt64;
  booleans @3 :List(Text);             # sorted; null: the worker states none (hosts.yaml's stand)
  numerics @4 :List(NumericValue);     # sorted by name
  strings @5 :List(StringValue);       # sorted by name; null: the worker states none
  timeMs @6 :Int64;                    # when the leader accepted the registration
}

struct NumericValue {
  name @0 :Text;
  value @1 :Float64;
}

struct StringValue {
  name @0 :Text;
  value @1 :Text;
}

# ---- an administrator closing or opening a host (xceadmin hosts close|open) ----

# A closed host gets no new jobs (its running jobs go on); opening it takes the reason away.
struct HostControlFact {
  host @0 :Text;
  close @1 :Bool;            # true: close; false: open
  reason @2 :Text;           # why (shown by `xcecli hosts`); null: none given
  user @3 :Text;             # the admin who asked (RBAC is re-checked in apply)
}

# A host an administrator closed, in the snapshot.
struct ClosedHost {
  host @0 :Text;
  reason @1 :Text;           # null: none given
  user @2 :Text;
  timeMs @3 :Int64;          # when it was closed (the fact's time)
}

# ---- finished jobs leaving the state (retention) ----

# The leader's decision that these finished jobs leave the replicated state (their retention is
# over, or there are more finished jobs than finished_jobs_max). Apply removes each that is still
# DONE or EXIT, and reports the removed records so that every controller writes them to its
# accounting store; a job that went back to PEND meanwhile (requeue, restart) stays.
struct CleanFact {
  jobIds @0 :List(UInt64);   # in id order
}

# ---- results kept in the session table (exactly-once replies) ----

enum ResultKind {
  noop @0;
  submitted @1;
  rejected @2;
  configApplied @3;
  dispatched @4;
  declined @5;
  statusApplied @6;
  ignored @7;
  controlled @8;
  hostRegistered @9;
  cleaned @10;              # never in a session (a CleanFact has no client); here for completeness
  modified @11;             # (added with job modify)
  hostControlled @12;
  credentialApplied @13;    # (added with issue 19)
}

struct NameCount {
  name @0 :Text;
  isAlias @1 :Bool;
  pendingJobs @2 :UInt32;
}

struct ApplyResult {
  kind @0 :ResultKind;
  jobId @1 :UInt64;
  code @2 :Text;
  message @3 :Text;
  inUse @4 :List(NameCount);
  runNumber @5 :UInt32;
  warnings @6 :List(Text);
}

# ---- the snapshot: the whole state as one message ----

struct Job {
  id @0 :UInt64;
  state @1 :JobState;
  user @2 :Text;
  queue @3 :Text;
  profile @4 :Text;          # as recorded; null: no profile (old records)
  profileRequested @5 :Text;
  spec @6 :JobSpec;
  submitTimeMs @7 :Int64;
  runNumber @8 :UInt32;
  requeueCount @9 :UInt32;
  record @10 :DispatchRecord; # the current (or last) run's frozen record; null while pending
  dispatchTimeMs @11 :Int64;
  pid @12 :UInt32;
  startTimeMs @13 :Int64;
  endTimeMs @14 :Int64;
  exitCode @15 :Int32;
  signal @16 :Text;
  reason @17 :Text;
  killRequestedBy @18 :Text;
  lastDecline @19 :Text;     # why the last dispatch was declined (pend reason), null if none
  started @20 :Bool;
  heldBy @21 :Text;          # (added with hold) the user who held the pending job; null: not held
  events @22 :List(JobEvent); # (added with hold/suspend/modify) oldest first
  dependency @23 :Text;         # `-w` as the user wrote it; null: none (an array element: its array's)
  dependencyResolved @24 :Text; # the same with job names resolved to ids at submit (what is evaluated)
  dependencyKill @25 :Bool;     # `--dep-never kill`
}

struct Session {
  clientId @0 :Text;
  lastSequence @1 :UInt64;
  lastTimeMs @2 :Int64;
  result @3 :ApplyResult;
  user @4 :Text;  # the user who opened the session (others are refused); empty in older snapshots
}

struct Snapshot {
  formatVersion @0 :UInt32;
  appliedIndex @1 :UInt64;
  nextJobId @2 :UInt64;
  logTimeMs @3 :Int64;
  config @4 :List(ConfigFile); # null: no configuration applied yet
  jobs @5 :List(Job);          # in id order
  sessions @6 :List(Session);  # oldest first (the expiry order)
  hosts @7 :List(RegisteredHost); # each host's last registration, by host name (added with registrations)
  jobsCleaned @8 :UInt64;      # finished jobs removed by CleanFacts so far (0 in older snapshots)
  closedHosts @9 :List(ClosedHost); # hosts an administrator closed, by host name (null in older snapshots: none)
  arrays @10 :List(Job);        # job arrays, by id: each holds what its elements share (id, user, queue,
                               # profile, spec, submit time, dependency); an element in `jobs` holds only
                               # its own state, its id being ARRAY_ELEMENT_ID_BASE + ID * SPAN + INDEX
  hostCredentials @11 :List(HostCredentialState);  # (added with issue 19) by host name; absent: every host at epoch 0
  revokedTokens @12 :List(RevokedToken); # (added with issue 19) by jti
}

struct HostCredentialState {
  host @0 :Text;
  epoch @1 :UInt32;
  revoked @2 :Bool;
}

struct RevokedToken {
  jti @0 :Text;
  untilMs @1 :Int64;
}
