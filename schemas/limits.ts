/** Every number the spec fixes (§9), in one place. */
export const LIMITS = {
  /**
   * Nesting of any JSON a caller sends (every public route, checked before the parse): deeper bodies are 400
   * invalid_request. No SDK nests anywhere near this; a 10 KB body nested 5,000 deep would otherwise overflow
   * the stack of every recursive walk (JSON.stringify, zod) that follows.
   */
  json: { maxDepth: 64 },
  errorBatch: { minEvents: 1, maxEvents: 20, maxBodyBytes: 64 * 1024 },
  errorFields: { name: 200, message: 2000, stack: 8192, debugIds: 100 },
  /**
   * An error event's context (issue 40, schemas/error-context.ts), cut to these, never refused: the newest 100
   * breadcrumbs within 32K characters in all; tags as Sentry bounds them (keys 32, values 200); contexts flat.
   */
  errorContext: {
    breadcrumbs: 100,
    breadcrumbChars: 32 * 1024,
    breadcrumbName: 64,
    breadcrumbMessage: 1024,
    breadcrumbDataKeys: 20,
    breadcrumbDataValue: 512,
    tags: 50,
    tagKey: 32,
    tagValue: 200,
    contexts: 20,
    contextKeys: 30,
    contextValue: 256,
    key: 64,
    url: 2048,
    header: 512,
    user: 256,
    release: 200,
    dist: 64,
    serverName: 256,
    sdkName: 128,
    clientEnvironment: 64,
    userAgent: 512,
  },
  errorIngestRate: { perKeyAndIpPerMinute: 30, perKeyPerMinute: 200 },
  /**
   * Sentry SDKs' ingest (ours; issues 15, 40): an envelope up to 20 MB as sent, and as much once decompressed (gzip,
   * deflate or br; bodies that inflate past `syncInflateBytes` are inflated off the event loop), so a 5 MB attachment beside an
   * event arrives; at most 20 events an envelope, as in one of our batches. Each item has its own cap (`itemBytes`,
   * by item type): an item past it is dropped and counted (`oversize_<type>`), the rest of the envelope is kept.
   * Attachments are never kept. Each event is cut to §9's field sizes.
   */
  /**
   * Large request bodies held by the edge at once (ingest/http/body-budget.ts): a body past `freeBytes` reserves its
   * size, an inflation off the event loop its limit; past `totalBytes` the request is refused 503 `edge_busy`.
   */
  largeBodies: { freeBytes: 1024 * 1024, totalBytes: 256 * 1024 * 1024 },
  sentryIngest: {
    maxBodyBytes: 20 * 1024 * 1024,
    maxDecompressedBytes: 20 * 1024 * 1024,
    syncInflateBytes: 1024 * 1024,
    maxEventsPerEnvelope: 20,
    itemBytes: {
      event: 1024 * 1024,
      feedback: 256 * 1024,
      user_report: 16 * 1024,
      session: 16 * 1024,
      sessions: 256 * 1024,
      check_in: 16 * 1024,
      client_report: 64 * 1024,
    },
    /** Item types never kept (transactions, spans, replays, profiles, logs, metrics): the SDK is told to stop sending them for this long. */
    unkeptRetryAfterSec: 86_400,
  },
  /**
   * What SDKs send beside errors (issue 40), each kind limited on its own, per request that holds it, never against
   * errors: sessions (a browser sends one on every page load and navigation; `POST /v1/sessions/i` too), cron
   * check-ins (two per job run), and user feedback (a person typing). Client reports are never limited.
   */
  sessionIngestRate: { perKeyAndIpPerMinute: 6_000, perKeyPerMinute: 120_000 },
  checkInIngestRate: { perKeyAndIpPerMinute: 600, perKeyPerMinute: 6_000 },
  feedbackIngestRate: { perKeyAndIpPerMinute: 10, perKeyPerMinute: 300 },
  /** `POST /v1/sessions/i` (cx.js): 1-100 session updates, at most 64 KB. */
  sessionsBatch: { minSessions: 1, maxSessions: 100, maxBodyBytes: 64 * 1024 },
  /**
   * Analytics ingest (ours; the spec shows no numbers, issue 16). Sized for product analytics: a client batches up
   * to 100 events; a page or server sending a steady stream stays far under the rates.
   */
  analyticsBatch: { minEvents: 1, maxEvents: 100, maxBodyBytes: 512 * 1024 },
  analyticsFields: { event: 200, distinctId: 200, sessionId: 200, path: 2048, propertyKey: 200, propertyCount: 100, propertiesBytes: 16 * 1024 },
  /**
   * PostHog's SDKs unchanged (ingest/posthog/): the capture routes take the analytics batch's event count, with room
   * for the SDKs' wrappings (gzip, base64 forms); the body may inflate to 2 MB, and is then held to the same checks.
   */
  posthog: { maxBodyBytes: 512 * 1024, maxDecompressedBytes: 2 * 1024 * 1024 },
  analyticsIngestRate: { perKeyAndIpPerMinute: 1_200, perKeyPerMinute: 60_000 },
  /** Flag evaluations (ours): a page asks once per load, a server per request; both cached by ETag. */
  flagsRate: { perKeyAndIpPerMinute: 1_200, perKeyPerMinute: 120_000 },
  /** GET /v1/flags/i: how many flag keys one request may name. */
  flagsQuery: { maxKeys: 100 },
  /**
   * The edge's caches (ingest/project-cache.ts, flag-cache.ts) reload keys, settings, hosts and flags whole when the
   * `edge` change stamp moved (migration 0048), and at the latest when their last full load is this old: a restore from
   * a backup (the stamp may come back equal) or a change made where the triggers are missing reaches the edge within it.
   */
  edgeFullReloadMs: 60_000,
  /**
   * Inbound provider webhooks (§4.2): bodies up to 1 MB (GitHub caps its payloads at 25 MB but a push of a connected
   * repository is far smaller; Stripe's events are a few KB); a signed timestamp within 5 minutes; per caller IP 600
   * deliveries a minute; each delivery id remembered 7 days (providers redeliver for 3).
   */
  inbound: { maxBodyBytes: 1024 * 1024, timestampToleranceSec: 300, perIpPerMinute: 600, dedupeKeepMs: 7 * 24 * 60 * 60 * 1000 },
  /**
   * A body over a route's limit is read to its end and thrown away before the 413 (up to drainBytes more, for at most
   * drainMs; nginx lingers the same way), so a client that writes its whole body before it reads (most webhook
   * senders, Python's requests) gets the 413 JSON rather than a reset; past those bounds the 413 goes out at once.
   */
  oversizeBody: { drainBytes: 64 * 1024 * 1024, drainMs: 30_000 },
  /**
   * Mail received by an inbox (spec §6.2): the largest .eml taken (inline in the provider's event, or fetched from its
   * API); email.received's text and html are cut at these many characters (`truncated` says so; the .eml keeps it all);
   * at most this many attachments are described, recipients looked up, and References followed for threading. A
   * message with more DKIM signatures than maxDkimSignatures (each one a DNS lookup) is not judged, so not authenticated;
   * neither is one whose judging (key lookups included) takes longer than dkimJudgeMs.
   */
  inboundMail: {
    maxRawBytes: 25 * 1024 * 1024,
    textMaxChars: 64 * 1024,
    htmlMaxChars: 128 * 1024,
    maxAttachments: 100,
    maxRecipients: 50,
    maxReferences: 50,
    maxDkimSignatures: 8,
    dkimJudgeMs: 10_000,
  },
  /**
   * Uptime monitors (issue 26): check intervals and timeouts; a monitor goes down after `failuresToDown` consecutive
   * failures (default) and up after one success; at most `bodyReadBytes` of a body are read to look for its text;
   * checks in flight per process; raw checks kept `checksKeepDays` in the analytical store (hourly rollups 100 days);
   * the public status JSON is cached `statusCacheMs` and rate limited per caller IP.
   */
  uptime: {
    intervalSec: { min: 30, max: 3600, default: 60 },
    timeoutMs: { min: 1000, max: 30_000, default: 10_000 },
    failuresToDown: { min: 1, max: 10, default: 2 },
    bodyReadBytes: 64 * 1024,
    maxMonitorsPerProject: 100,
    concurrency: 64,
    checksKeepDays: 30,
    rollupKeepDays: 100,
    statusCacheMs: 5_000,
    statusPerIpPerMinute: 600,
    statusDays: 90,
    /**
     * Heartbeat (cron) monitors (issue 40): Sentry's defaults for what a check-in's monitor_config leaves out (margin 1
     * min, max runtime 30 min, one failure opens an incident, one success ends it); check-ins kept per monitor; the
     * HTTP cron form's rate limits per ingest key, and per key and monitor slug.
     */
    heartbeat: {
      checkinMarginMin: { max: 40_320, default: 1 },
      maxRuntimeMin: { min: 1, max: 40_320, default: 30 },
      failuresToDown: { min: 1, max: 720, default: 1 },
      recoveriesToUp: { min: 1, max: 720, default: 1 },
      checkInsKept: 200,
      httpPerKeyPerMinute: 300,
      httpPerMonitorPerMinute: 30,
    },
  },
  /**
   * Status page subscribers (issue 43). Sign-ups: per caller IP an hour, per page (project) an hour, one confirmation
   * mail per address and page every `addressEveryHours`, and at most `addressPerDay` to one address from every page
   * together (so a page cannot be used to mail-bomb a stranger). A confirmation link lasts
   * `confirmHours`; a page keeps at most `perProject` e-mail subscribers and `webhooksPerProject` webhook ones; each
   * notification goes out to `mailConcurrency` subscribers at a time.
   */
  statusSubscribers: {
    perIpPerHour: 10,
    perProjectPerHour: 100,
    addressEveryHours: 6,
    addressPerDay: 3,
    confirmHours: 48,
    perProject: 5000,
    webhooksPerProject: 10,
    emailMaxChars: 254,
    mailConcurrency: 4,
  },
  /**
   * Incidents and maintenance people write (issue 43): sizes, how many a project may have open or upcoming at once,
   * updates per incident; what the status JSON shows of them (incidents resolved and maintenance ended within
   * `shownDays`, the newest `updatesShown` updates of each); how often the uptime monitor looks for maintenance that
   * started or ended (its uptime.maintenance.started / .completed events); changes a minute per project.
   */
  statusIncidents: {
    titleChars: 200,
    messageChars: 5_000,
    openPerProject: 50,
    updatesPerIncident: 100,
    upcomingMaintenancePerProject: 50,
    maintenanceMaxDays: 31,
    maintenanceAheadDays: 366,
    shown: 20,
    updatesShown: 10,
    maintenanceShownDays: 14,
    maintenanceSweepMs: 15_000,
    writesPerProjectPerMinute: 60,
  },
  /** Events a project may store in a UTC calendar month; past it 429 analytics_quota_exceeded until the month ends. */
  analyticsMonthlyQuota: 10_000_000,
  /** A client timestamp is kept within [received - past, received + future]; outside, it is the receive time. */
  analyticsTimestampWindowMs: { past: 7 * 24 * 60 * 60 * 1000, future: 5 * 60 * 1000 },
  errorCaps: { productionPerMonth: 50_000, previewPerMonth: 5_000, openGroupsPerEnvironment: 2_000 },
  ingestOrigins: { max: 20 },
  groupSamples: 20,
  errorAlert: { perIssueMs: 6 * 60 * 60 * 1000, testPerProjectMs: 15 * 60 * 1000 },
  /** Alert rules per project (issue 41, schemas/api/alerts.ts): counts and sizes a tenant may set. */
  alertRules: {
    perProject: 50,
    nameChars: 100,
    triggers: 5,
    count: { min: 1, max: 1_000_000 },
    minutes: { min: 1, max: 1_440 },
    endpoints: 20,
    environments: 20,
    throttleMinutes: { min: 1, max: 43_200, default: 360 },
    /** How long a processor trusts the rules it read (an API write in the same process drops them at once). */
    cacheMs: 10_000,
  },
  webhook: {
    maxAttempts: { min: 1, max: 10, default: 6 },
    attemptTimeoutMs: 10_000,
    /**
     * Connections kept alive to one receiver origin, and so deliveries in flight to it per processor (Svix and
     * Hookdeck isolate receivers the same way): a slow receiver holds at most these, the others keep their rate.
     */
    perReceiverConnections: 8,
    /** An idle kept-alive connection is closed after this. */
    idleConnectionMs: 30_000,
    /** Bytes of a receiver's answer read (and dropped) to keep its connection; past them the connection is dropped. */
    answerReadBytes: 64 * 1024,
    /** Delay before attempt n+1, after attempt n failed (then the last value repeats). */
    backoffMs: [10_000, 40_000, 180_000, 660_000, 2_580_000],
    sweepIntervalMs: 60_000,
    signatureToleranceSec: 300,
    deliveryLogPerEndpoint: 100,
    rotationOverlapMs: 24 * 60 * 60 * 1000,
  },
  /** Sign-in attempts per 15 minutes (api/accounts/sign-in-limits.ts): per account and IP, per IP, per known device. */
  signIn: { perEmailAndIpPer15Min: 10, perIpPer15Min: 50, perDevicePer15Min: 10 },
  /**
   * Device login (ours): codes live 10 minutes; starting one is public, so it is limited per caller IP
   * (a person starts one login at a time), and codes expired for a day are deleted. A signed-in person looks codes up
   * and approves them at most codeChecksPerUserPer10Min times (RFC 8628 §5.1: a person tries few codes).
   */
  cliDeviceCode: { ttlMs: 10 * 60 * 1000, pollIntervalSec: 5, startsPerIpPer10Min: 10, codeChecksPerUserPer10Min: 30, keepExpiredMs: 24 * 60 * 60 * 1000 },
  sessionTtlMs: 30 * 24 * 60 * 60 * 1000,
  /** Deploys (ours; the spec shows none of these numbers). */
  deploys: {
    /** Stored log lines per deploy; past it one line says so and the rest of the build's output is dropped. */
    logLinesPerDeploy: 10_000,
    /** A longer line is cut (with a marker). */
    logLineChars: 4_000,
    /** A building deploy's lease; the builder renews it every third of this. */
    leaseMs: 30_000,
    /** Deploy hook calls: per token and per caller IP, per minute. */
    hookCallsPerTokenPerMinute: 60,
    hookCallsPerIpPerMinute: 120,
    /** Largest hook body (a code host's push payload fits; it is only read for the signature). */
    hookBodyBytes: 1024 * 1024,
    /** Lists: deploys per page. */
    listDefault: 20,
    listMax: 100,
    /** Build log lines per page of `GET .../deploys/:deployId/logs` (and per read of its followed form). */
    logPageLines: 1000,
  },
  /** Build variables per project (issue 42, schemas/api/env.ts): counts and sizes a tenant may set. */
  buildEnv: { perProject: 200, keyChars: 256, valueBytes: 64 * 1024, totalBytes: 256 * 1024 },
  /**
   * Source maps (issue 37; ours, the spec shows none): what a build keeps or an upload stores, and what the processor
   * spends on them. A map past a bound is refused with its reason (domain/source-maps/source-map-file.ts).
   */
  sourceMaps: {
    /** One map's bytes (a large app's main bundle maps to a few MB; Sentry's own cap on a file is 40 MB). */
    mapBytes: 16 * 1024 * 1024,
    /** Maps kept per deploy, and their bytes together. */
    mapsPerDeploy: 500,
    bytesPerDeploy: 128 * 1024 * 1024,
    /** An index map's `sections` nested deeper than this, or more sections than this in all, is refused. */
    sectionDepth: 2,
    sections: 1_000,
    /** An upload (sentry-cli's artifact bundle, `cx sourcemaps upload`): its bytes and its files. */
    uploadBytes: 128 * 1024 * 1024,
    uploadFiles: 2_000,
    /**
     * One upload chunk (the chunk size told to sentry-cli, a power of two as its older versions need), sent one a
     * request: a chunk request's body stays under `chunkRequestBytes`, the most the single-process edge relays to the
     * API. An assemble names at most uploadBytes / chunkBytes chunks.
     */
    chunkBytes: 512 * 1024,
    chunkRequestBytes: 1024 * 1024,
    /** Chunks not assembled are swept this long after their last upload. */
    chunkTtlMs: 60 * 60_000,
    /** Uploaded maps kept per project: the newest bundles up to these bytes; older ones go. */
    uploadedBytesPerProject: 512 * 1024 * 1024,
    /** Frames of one event the processor tries to resolve (top first); the rest keep their minified form. */
    framesPerEvent: 50,
    /** Context lines either side of a frame's line, and a context line's characters (cut around the column). */
    contextLines: 5,
    contextLineChars: 300,
    /** Bytes of maps one batch may parse cold (not cached); frames past it stay minified, counted `busy`. */
    coldBytesPerBatch: 64 * 1024 * 1024,
    /** Parsed maps kept per processor, by their source bytes. */
    cacheBytes: 256 * 1024 * 1024,
  },
} as const;
