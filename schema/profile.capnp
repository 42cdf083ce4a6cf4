# The application profile, as hashed and as carried in configuration facts.
#
# The profile content hash (statemachine/profile-hash.ts) is the SHA-256 of the CANONICAL encoding
# of an AppProfile (Cap'n Proto spec: single segment, pointers in pre-order, no padding, trailing
# zero words of each struct's data and pointer sections truncated), with `description` left unset
# and empty Text / empty lists normalised to unset. Evolution is additive only: a new field gets a
# new ordinal at the end, and its zero / unset value must mean "not set", so that adding a field
# does not change the hash of profiles that do not use it.
@0xa7f1bc675e8034bb;

struct AppProfile {
  name @0 :Text;
  description @1 :Text;          # never part of the hash
  aliases @2 :List(Text);        # sorted when hashed (their order carries no meaning)
  mode @3 :ExecMode;
  launchType @4 :LaunchType;     # unset: the job runs serial
  resreq @5 :ResReq;             # null: the profile sets no resource requirement
  tasks @6 :TaskRange;           # null: no task range
  limits @7 :Limits;             # null: no limit set
  env @8 :List(EnvVar);          # sorted by name
  preExec @9 :Text;
  postExec @10 :Text;
  jobPrePostExec @11 :JobPrePostExec;
  service @12 :Service;          # null: kind batch

  enum ExecMode { direct @0; }
  enum LaunchType { unset @0; serial @1; openmpi @2; mpich @3; }
  enum JobPrePostExec { allow @0; forbid @1; }
}

struct TaskRange {
  min @0 :UInt32;
  max @1 :UInt32;
}

# 0 means not set (a limit of zero is refused by the configuration).
struct Limits {
  runtimeS @0 :UInt64;
  memoryBytes @1 :UInt64;
  cpuS @2 :UInt64;
  tasks @3 :UInt64;
}

struct EnvVar {
  name @0 :Text;
  value @1 :Text;
}

struct ResReq {
  select @0 :List(SelectExpr);   # top-level terms, ANDed
  rusage @1 :List(RusageItem);
  span @2 :Span;                 # null: not set
  same @3 :List(Text);           # null: not set
  order @4 :List(OrderKey);      # null: not set
}

struct SelectExpr {
  union {
    bool @0 :Text;
    cmp @1 :Cmp;
    not @2 :SelectExpr;
    and @3 :List(SelectExpr);
    or @4 :List(SelectExpr);
  }
}

struct Cmp {
  name @0 :Text;
  op @1 :CmpOp;
  value :union {
    number @2 :Float64;
    string @3 :Text;
  }
  enum CmpOp { gt @0; ge @1; lt @2; le @3; eq @4; ne @5; }
}

struct RusageItem {
  name @0 :Text;
  value @1 :Float64;
  hasDuration @2 :Bool;
  durationS @3 :UInt64;
}

# 0 means not set.
struct Span {
  ptile @0 :UInt32;
  hosts @1 :UInt32;
}

struct OrderKey {
  name @0 :Text;
  descending @1 :Bool;
}

struct Service {
  restart @0 :Restart;
  liveness @1 :Probe;            # null: none
  readiness @2 :Probe;           # null: none
  ports @3 :List(Port);          # sorted by name
  replicas @4 :Range;            # null: not set
  spread @5 :Spread;             # null: not set
  rollout @6 :Rollout;           # null: not set

  struct Restart {
    policy @0 :Policy;
    backoffInitialS @1 :UInt64;
    backoffMaxS @2 :UInt64;
    giveUpAttempts @3 :UInt32;   # 0: never give up
    giveUpWindowS @4 :UInt64;
    enum Policy { onFailure @0; always @1; never @2; }
  }

  struct Probe {
    action :union {
      command @0 :Text;
      tcpPort @1 :Text;
      http @2 :HttpGet;
    }
    periodS @3 :UInt64;
    timeoutS @4 :UInt64;
    initialDelayS @5 :UInt64;
    failureThreshold @6 :UInt32;
  }

  struct HttpGet {
    port @0 :Text;
    path @1 :Text;
  }

  struct Port {
    name @0 :Text;
    port @1 :UInt16;             # 0: the worker picks one
    protocol @2 :Protocol;
    enum Protocol { tcp @0; udp @1; }
  }

  struct Range {
    min @0 :UInt32;
    max @1 :UInt32;
  }

  struct Spread {
    across @0 :Text;
    maxSkew @1 :UInt32;
  }

  struct Rollout {
    maxUnavailable @0 :UInt32;
    maxSurge @1 :UInt32;
  }
}
