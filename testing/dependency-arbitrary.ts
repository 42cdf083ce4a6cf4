// fast-check generator of a job's dependency (`-w`) as apply stores it: a canonical resolved text
// (model/dependency.ts formatDependency) with any user text. Test-only.

import fc from 'fast-check';
import { dependencyOf } from '../statemachine/dependency.js';
import type { JobDependency } from '../statemachine/state.js';
import { arbText } from './scalar-arbitrary.js';

/** Resolved dependencies as apply writes them (formatDependency's canonical text), with any user text. */
const RESOLVED_DEPENDENCIES = [
  'done(1)',
  'done(1) && ended(2[*])',
  '!exit(3[4]) || (started(5) && done(6))',
  '!(done(7) || exit(8))',
] as const;
export const arbDependency: fc.Arbitrary<JobDependency | null> = fc.option(
  fc
    .tuple(arbText, fc.constantFrom(...RESOLVED_DEPENDENCIES), fc.boolean())
    .map(([text, resolved, kill]) => dependencyOf(text, resolved, kill)),
  { nil: null, freq: 2 },
);
