// The daemon's ClockPort: Node's timers and the monotonic clock (performance.now).

import type { ClockPort, TimerHandle } from './ports.js';

export const nodeClock: ClockPort = {
  now: () => performance.now(),
  setTimeout: (fn, ms) => ({ id: setTimeout(fn, ms) }),
  clearTimeout: (h: TimerHandle) => clearTimeout(h.id as NodeJS.Timeout),
  setInterval: (fn, ms) => ({ id: setInterval(fn, ms) }),
  clearInterval: (h: TimerHandle) => clearInterval(h.id as NodeJS.Timeout),
  defer: (fn) => void setImmediate(fn),
};
