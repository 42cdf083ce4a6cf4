// Structured logs: one JSON object a line (for machines and journald), or a readable line on a
// terminal. A logger carries fixed fields (`component`, `node`) and is cheap to derive.

export type LogLevel = 'debug' | 'info' | 'warn' | 'error';
const LEVEL_RANK: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };

export type LogFields = Record<string, unknown>;

export interface LogSink {
  write(line: string): void;
}

export interface LoggerOptions {
  readonly level?: LogLevel;
  /** `json`: one object a line; `pretty`: readable; `auto`: pretty on a TTY, JSON otherwise. */
  readonly format?: 'json' | 'pretty' | 'auto';
  readonly sink?: LogSink;
  readonly isTTY?: boolean;
  readonly color?: boolean;
  readonly now?: () => number;
}

export class Logger {
  private readonly rank: number;
  private readonly pretty: boolean;
  private readonly color: boolean;

  constructor(
    private readonly options: Required<Omit<LoggerOptions, 'isTTY'>>,
    private readonly fields: LogFields,
  ) {
    this.rank = LEVEL_RANK[options.level];
    this.pretty = options.format === 'pretty';
    this.color = options.color && this.pretty;
  }

  child(fields: LogFields): Logger {
    return new Logger(this.options, { ...this.fields, ...fields });
  }

  enabled(level: LogLevel): boolean {
    return LEVEL_RANK[level] >= this.rank;
  }

  debug(msg: string, fields?: LogFields): void {
    this.log('debug', msg, fields);
  }
  info(msg: string, fields?: LogFields): void {
    this.log('info', msg, fields);
  }
  warn(msg: string, fields?: LogFields): void {
    this.log('warn', msg, fields);
  }
  error(msg: string, fields?: LogFields): void {
    this.log('error', msg, fields);
  }

  log(level: LogLevel, msg: string, fields?: LogFields): void {
    if (LEVEL_RANK[level] < this.rank) return;
    const time = new Date(this.options.now()).toISOString();
    const all = fields === undefined ? this.fields : { ...this.fields, ...fields };
    if (!this.pretty) {
      this.options.sink.write(`${JSON.stringify({ time, level, msg, ...all }, jsonSafe)}\n`);
      return;
    }
    const extra = Object.entries(all)
      .map(([k, v]) => `${k}=${typeof v === 'string' ? v : JSON.stringify(v, jsonSafe)}`)
      .join(' ');
    const tag = this.color ? `${COLORS[level]}${level.toUpperCase().padEnd(5)}\x1b[0m` : level.toUpperCase().padEnd(5);
    this.options.sink.write(`${time.slice(11, 23)} ${tag} ${msg}${extra ? `  ${extra}` : ''}\n`);
  }
}

const COLORS: Record<LogLevel, string> = { debug: '\x1b[90m', info: '\x1b[36m', warn: '\x1b[33m', error: '\x1b[31m' };

function jsonSafe(_key: string, value: unknown): unknown {
  if (typeof value === 'bigint') return value.toString();
  if (value instanceof Error) return { name: value.name, message: value.message };
  if (value instanceof Uint8Array) return `<${value.byteLength} bytes>`;
  return value;
}

export function parseLogLevel(text: string | undefined, fallback: LogLevel): LogLevel {
  if (text === undefined || text === '') return fallback;
  if (text in LEVEL_RANK) return text as LogLevel;
  throw new Error(`log level "${text}" is not one of debug, info, warn, error`);
}

export function createLogger(fields: LogFields, options: LoggerOptions = {}): Logger {
  const sink = options.sink ?? process.stderr;
  const isTTY = options.isTTY ?? (options.sink === undefined && process.stderr.isTTY === true);
  const format = options.format ?? 'auto';
  const pretty = format === 'pretty' || (format === 'auto' && isTTY);
  return new Logger(
    {
      level: options.level ?? parseLogLevel(process.env['XCE_LOG_LEVEL'], 'info'),
      format: pretty ? 'pretty' : 'json',
      sink,
      color: options.color ?? (isTTY && process.env['NO_COLOR'] === undefined),
      now: options.now ?? Date.now,
    },
    fields,
  );
}
