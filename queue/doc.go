/*
Package queue is the task lifecycle of qo: a task is one JSON object in an
S3-compatible bucket, every state change is a conditional PUT on it, and
bucket versioning keeps every state it ever had. This file is the single
source of truth for the layout, the state machine and the rules every
writer follows; the code implements exactly what is written here.

# Key layout (layout 5)

	queue.json                                          queue configuration (Init; read by Open)
	tasks/{shard}/{id}.json                             THE task object: the only truth
	ready/{type}/{shard}/[-{key}/]{rank-ms}~{priority}~{id}
	                                                    ready index: one empty object per pending task ({key}: see Task keys)
	leases/{shard}/{expires-ms}~{type}~{id}~{lease_id}~{worker_id}
	                                                    lease index: one empty object per running task
	waiting/{shard}/{id}                                waiting index: one empty object per waiting task (see Dependencies)
	edges/{child}/{parent}/{status}                     a parent's end not yet recorded on its waiting child: one empty object (see Dependencies)
	dead/{inv-ms}/{shard}/{type}/{id}                   dead letters: one empty object per failed task
	data/{shard}/{id}/input.json|output-{lease_id}.json offloaded payloads (see Large payloads)
	control.json                                        pause switches and fleet-wide caps and rates (see Pause, Fleet-wide concurrency caps, Fleet-wide rate limits)
	schedules/{name}.json                               cron schedules (see Schedules)
	idempotency/{h[:2]}/{h}.json                        idempotency key markers (see Idempotency keys, Workflows)
	workflows/{shard}/{id}.json                         workflow records: steps and their task ids (see Workflows)
	workflow-names/{name}.json                          a workflow name's latest workflow (see Workflows)
	workers/{worker_id}.json                            worker registry: heartbeats (liveness, stats, shares of the caps)
	shard-leases/{shard}.json                           named lease: which worker polls a shard
	monitor/leader.json                                 named lease: which monitor is the leader
	monitor/sweep.json                                  the sweeper's cursor and last pass
	monitor/probe.json                                  the server probe of Init and worker start (see Server probes)
	monitor/throughput/{YYYY-MM-DDTHH}.json             finishes per minute of one UTC hour (see Throughput rollup)

Package queue reads and writes the task objects, their indexes, data/,
idempotency/ and the workflows (Queue.Workflows); the other object kinds
have packages of their own, which import queue and which queue never
imports (each names its keys in its doc.go and follows the rules here):
control.json is queue/control's, schedules/ queue/schedule's, workers/
queue/registry's, shard-leases/ and monitor/leader.json
queue/namedlease's, monitor/sweep.json queue/sweepstate's and
monitor/throughput/ queue/throughput's. The key names stay in queue
(keys.go), and so do three formats: WorkerInfo and NamedLease, which
queue's stats counter and migrate read, and Control, the type of
control.json that every layer above shares.

Nothing else in the bucket belongs to the queue (Keys lists the keys and
prefixes above): qo ui deploy puts the web UI's files under ui/, and
credentials minted for the web UI may not write there. Those credentials
read only, unless minted with --operator: then they also write what the
page's actions write (task objects, ready/, waiting/ and dead/ entries,
deletes of leases/ entries, control.json), and never queue.json, monitor/,
shard-leases/ or workers/ (command/ui.go, linkAccess).

{id} is the canonical lowercase UUID. New tasks get a UUIDv7 (NewID): its
first 48 bits are the creation time in milliseconds, so within a shard
task keys sort by creation time and "tasks created since T" is a listing
that starts after T (see Listing). Tasks submitted with an idempotency key
get one too (see Idempotency keys); tasks of layout 1 keep their random v4
ids, and ids derived from idempotency keys by layout 1 (v5) keep theirs.

{shard} is ShardOf(id): ShardChars hex characters, 1 (16 shards) or 2
(256 shards), chosen once by Init and stored in queue.json; every
component reads it from there and nothing assumes 16. For a v7 id they are
its LAST characters (random), for any other id its first ones (as random),
so at every instant new tasks spread evenly over the shards, and task keys
written under layout 1 stay where they are.

Every index but dead/ is partitioned by shard: the shard comes right
after the prefix, or, in the ready index, after the task type, so the
request load of a busy queue spreads over as many key prefixes as there
are shards (per type in ready/), each of which S3 can partition on its own
(docs/scaling.md has the arithmetic): no prefix is written per task by
more than 1/shards of the traffic. Within a partition the time comes
first: {rank-ms} and {expires-ms} are Unix milliseconds, zero-padded to 13
digits, so key order is time order, and a LIST of one partition returns
the entries to run (or expire) first and stops at the first one in the
future. {rank-ms} is available_at moved by the task's priority (see
Priorities).

The ready index is partitioned by type first, then shard: a partition,
"{type}/{shard}" (ReadyPartition), holds one type's pending tasks in one
shard, in rank order. A worker lists only the types it claims now: a
type at its limit or paused is not listed at all, and a deep backlog of
one type never stands in front of another's, since the LIST of a type
begins at that type's partitions and a walk that runs into a type it did
not ask for starts its next LIST past all of it (ListReady; with the type
after the rank, as in layout 3, a worker serving one type paged through
every other type's entries ranked before its own, so its wait grew with
their depth). The cost of an idle queue stays one LIST per poll: a LIST
over ready/ runs on across partitions in key order, so an idle worker
still sends one LIST per poll when the index is empty, whatever the
number of types and shards. The priority sits in the ready key so a
worker computes available_at without a GET. Within a partition, the
entries of tasks with a key lie in a section per key, "-{key}/" (the
mark "-" sorts before every digit, so the sections come first, then the
entries without a key), each section in rank order: so a worker takes
turns over keys and holds per-key caps from the listing alone, and a LIST
that meets one key's deep backlog goes on past that key's section to the
others' (see Task keys).

The lease key carries the lease id, so every claim and extension writes a
key of its own: two claimers of one task never share (or delete) each
other's entry; and it ends with the holder's worker id, so the monitor
finds every task a dead worker held from the listing alone (see Leases and
liveness).

dead/ is the one index whose key begins with a time: {inv-ms} is
9999999999999 minus the failure time (completed_at), so ONE LIST of
"dead/" returns the newest dead letters first, across every shard. It is
written only when a task fails for good (a small fraction of the traffic;
docs/scaling.md states the rate at which it would need partitioning).

A ready or lease entry is ONE key segment below its partition: its fields
joined by "~" (FieldSep), not a segment each. S3 itself has no directories,
but MinIO and file-backed gateways (the embedded one of qo dev among them)
store every "/" of a key as a directory, so an entry of six segments cost
them four more directories, walked by every LIST; one segment costs none.
On MinIO a worker's LIST of 1,000 ready entries takes a third of the time
(BenchmarkIndexKeyShape in worker/bench, measured with the keys of layout
3; docs/performance.md). The type segment of a ready key is a directory
per type and shard, shared by all of their entries, not one per entry.
The ready and lease indexes are written and read for every task; dead/
(written once per failed task, read a page at a time) keeps its segments.

{type} matches [A-Za-z0-9_.:-]{1,64}; worker ids [A-Za-z0-9_.:-]{1,128};
schedule names [A-Za-z0-9_.:-]{1,64}. None of them may hold "~" or "/", so
each is exactly one field of the keys it appears in, nor be dots only ("."
or ".." as a key segment is a path step that S3 servers and clients
resolve away, so the object would land under another key). Lease ids are
UUIDs (36 characters). These rules hold for what is read too: a task
object whose worker_id or lease_id breaks them, or a worker record whose
id does, is malformed (DecodeTask, DecodeWorker), so no key, log or
terminal line is built from it; the web UI checks every part it reads
from the bucket by the same rules (webui/src/queue.js, keyparts cases).

queue.json says which layout the bucket uses: {"format":5,...} is layout 5
(this one). Older layouts are refused by Open with ErrLayoutOutdated,
naming `qo migrate`, which converts them in place (Migrate): layout 4
("format":4) had the same keys but for the ready entry of a task with a
key, which carried the key as a last field among the partition's other
entries, "ready/{type}/{shard}/{rank-ms}~{priority}~{id}~{key}"; layout 3
("format":3) put every ready entry under its shard alone with the type
after the rank,
"ready/{shard}/{rank-ms}~{type}~{priority}~{id}[~{key}]"; layout 2
("format":2) had those keys with a "/" between the fields of a ready or
lease entry; layout 1 ("format":1) put the time before the shard and had
no dead-letter index. A ready key is told apart by its segments below
ready/ and the fields of its name: three segments in layout 5 (four in a
key's section, the third beginning with "-"), three with four fields in
layout 4 (a task with a key; its other entries are current), two in
layout 3, four or five in layouts 1 and 2. Migrate rewrites every ready
entry of layout 1, 2, 3 or 4 and every lease
entry of layout 1 or 2 under its current key (the new entry is written
first, the old one deleted after, so a run that stops part-way is
finished by the next), from layout 1 also builds the dead-letter index
from the failed tasks, and only then writes queue.json with the new
format. Task objects, their history and their payloads do not move; a task
object that does not decode is reported (key and reason) and left as it
is, an index key no layout reads is reported (its key) and left, and
everything else is converted and the switch made.

qo versions of an older layout refuse a newer format when they start, but
a process of an older layout started before the switch keeps writing
entries of its own layout, which no current process would read: a task it
releases would stay pending, a task it claims and dies with would stay
running. So:

  - Migrate refuses (ErrOlderVersionRunning, naming each one's id, host,
    pid and version) while the worker registry holds a live worker of an
    older layout: registry entries carry "layout" (LayoutVersion); one
    without it, or with a lower one, whose last write is within its
    DeadAfter plus MaxClockSkew is such a worker. On a bucket not yet
    converted it also refuses while the monitor leadership is held (no
    current monitor can open that bucket). Monitors and qo serve do not
    register, so on a converted bucket they cannot be seen. Force
    (qo migrate --force) converts anyway. Cost: 1 LIST per 1,000 workers
    and 1 GET per registered worker.
  - Stray entries of an older layout, written after the switch, are
    converted, never skipped. The sweeper converts each ready entry of an
    older layout it meets once the entry is SweepIdle old: its task, when
    pending, gets its current entry and the old one is deleted; a stale one
    goes once older than IndexGrace. So a stray pending task is claimable
    again within one sweep pass (see Sweeper). The lease check reads a
    lease entry of layout 2 as its own (it holds every field of a current
    one), so a stray running task is taken back when its lease runs out or
    its holder dies, within the bounds of Leases and liveness, and the old
    entry removed with it (a lease entry of layout 3 is a current one).
    Migrate run on a converted bucket converts the strays of both indexes
    in one pass of them (1 LIST per 1,000 entries, 1 GET per stray entry).
    None of these reads a finished task.

# Task spec

What a submit asks for is one struct, SubmitRequest, checked by one
validator, SubmitRequest.Validate, that every way in calls: Submit itself
(so a schedule's every run, the console's form and a Go caller), the JSON
decoder DecodeSubmit (a line of qo submit --file, the body of POST
/api/tasks, a workflow step), the command line's flags (before anything
is contacted) and schedule.Create (a schedule's task is checked as each
run's submit will check it, so none is accepted and then refused at every
run). Validate holds the rules that need neither the queue nor the clock;
Submit adds the input size bound (MaxPayloadBytes), the parents existing
and an expiry after the availability. Its errors are *SpecError: they
name the fields by their JSON names, and each way in words them with its
own (the flags: --timeout for timeout_seconds).

A zero value means "not given" (the default): a zero timeout is the
default 300 s, a zero expiry or uniqueness window none. A reader refuses
0 given explicitly for timeout_seconds, unique_for and expires_in
(GivenZero), as 0 is not a value they take. Durations are Go durations in
the struct; in JSON they are a duration string ("90s", "1h30m") or a
number of seconds, except timeout_seconds, whole seconds as its name
says. A schedule object keeps its task's timeout and expiry in whole
seconds (timeout_seconds, expires_after_seconds; 0 is the default and no
expiry), rounded up from the durations it is created with. Delay and
ExpiresIn are relative: Submit resolves them from one reading of the
clock, the expiry counting from the availability (a schedule's from each
run's due time).

The fields, their JSON names and help lines are SpecFields; a new field
is the struct field, its SpecFields entry, its rule in Validate, its case
in the decoder (SubmitRequest.set) and its entry in the command line's
flag table (command/taskflags.go).

# Task object (format 1)

Every object qo writes carries "format": 1. Readers refuse other versions:
a future format is reported as malformed, never misread. Fields (all
present in every object; absent values are null, "" or 0):

	format              1
	id                  task id (UUID)
	task_type           handler name
	shard               ShardOf(id): ShardChars hex chars (see Key layout)
	status              waiting | pending | running | completed | failed | cancelled | expired | archived
	available_at        RFC 3339 time; claimable when <= now (delay, backoff)
	lease_expires_at    RFC 3339 time or null; running only
	input               any JSON (null when none); never changes
	output              any JSON or null; set by succeeded
	timeout_seconds     lease length of one attempt (default 300)
	max_retries         retries after the first attempt (default 3)
	retry_count         retries consumed (0..max_retries)
	snooze_count        absent, or how often handlers snoozed the task (1..MaxSnoozes);
	                    reset by Replay (see Snooze)
	retry_policy        {initial_interval_ms, max_interval_ms, multiplier, jitter_percent}
	                    default {1000, 60000, 2, 0.25}: 1 s, 2 s, 4 s ... 60 s, each ±25 %
	created_at          submit time
	updated_at          time of the write that made this version
	completed_at        time the task reached a terminal status, or null
	worker_id           lease holder (running); last holder (terminal); "" when pending
	lease_id            random UUID of the current lease (the fence), "" when not running
	attempt             number of claims so far
	last_error          why the last attempt ended badly ("" after success)
	rev                 1 on submit, +1 on every write
	request_id          random UUID of the write that made this version
	last_event          canonical event of that write (see Events)
	cancel_requested    an operator asked to cancel
	cancel_requested_at time of that request, or null
	cancel_reason       operator's reason
	actor               absent, or on a version an operator action wrote (cancel,
	                    replay, archive, requeue, alone or in bulk) who made it
	                    (see Actor)
	idempotency_key     submit's idempotency key, or ""
	unique              absent, or {while_active} or {until}: the window the key binds
	                    for (see Uniqueness windows); never changes
	priority            high | normal | low (objects without it read as normal)
	key                 absent, or the task's key, [A-Za-z0-9_.:-]{1,64}; never changes
	                    (see Task keys)
	expires_at          RFC 3339 deadline for starting, or null (never expires)
	input_ref           null, or {key, version_id, bytes, sha256} of an offloaded input
	output_ref          null, or the same for an offloaded output
	parents             absent, or [{id, done}]: the tasks it runs after; done is ""
	                    until that parent's end is recorded here, then the status it
	                    ended in (see Dependencies)
	on_parent_failure   absent, or cancel | fail | run (with parents)
	children            absent, or [id]: tasks that run after this one, only ever added
	input_from          absent, or {field: {parent, path}}: values of parents' outputs
	                    the handler gets as input fields (see Workflows); never changes
	from_parents        absent, or {field: value}: those values, recorded as each
	                    parent completes
	workflow            absent, or {id, step}: the workflow and step this task is
	archived_from       absent, or on an archived task the status it was archived
	                    from (completed, failed, cancelled or expired), set by
	                    Archive; objects archived before it existed lack it
	metadata            absent, or {key: value}: string headers set at submit,
	                    never changed (see Task metadata)

The dependency and workflow fields are left out of tasks that have none,
actor out of versions no operator wrote, and archived_from out of tasks
not archived, so objects written before
they existed read the same. How an archived task ended (for Wait, for a
child submitted after it, for a workflow's status) is its archived_from;
for an object without it, the version it was archived from, read from its
history (1 LIST-VERSIONS + 2 GETs, only then), or when the history lacks
it the fields archiving kept (an expiry and no attempt: expired; last_error
without output or cancel request: failed; a cancel request without output:
cancelled; else completed). A workflow's status, read without requests,
uses the fields alone for such objects.

Times are UTC with millisecond precision (the resolution of index keys).
An object that does not decode (bad JSON, wrong field types, unknown format
or status, invalid type name, id or shard not matching its key) is a
*MalformedError: listings skip and report it, single reads return it,
nothing panics.

Readers may add "progress" to a running task they show (qo status --json,
GET /api/tasks/{id}): it is read from the holder's registry entry and never
stored in the task object (see Progress).

queue.json is {"format":5,"shard_chars":1|2,"created_at":...}, with
"tasks_retention_days" (see Retention) and "max_payload_bytes" (see Size
limits) when set. Worker
entries are WorkerInfo as JSON ("format":1, "layout":5: the key layout the
worker speaks, see Key layout; "progress": the running tasks' latest
progress reports, see Progress). Named leases are
{"format":1,"name":key,"holder":...,"expires_at":...,"acquired_at":...,
"updated_at":...,"request_id":...}; a released lease has holder "".
Index objects are empty: the key is the whole entry.

# State machine

	  Submit --after (parents not all completed)
	      |
	      v
	   WAITING --- Cancel; or a parent failed, cancelled or expired ---> CANCELLED
	      |        (on_parent_failure cancel; fail: FAILED; run: as completed)
	      |  every parent ended: released (never claimed before)
	      |
	      |                Submit
	      |                  |
	      +----------------->v
	+----------------->  PENDING  <---+  RequeueNow
	|                    |     ^  \---+  (delay/backoff -> now)
	|             Claim  |     |  Retry, ExpireLease (retries left);
	|                    v     |  Release, RequeueNow
	|                  RUNNING ----+
	|                 /   |   \ <--+  Extend; Cancel (cancel_requested)
	|     Complete   /    |    \   AckCancel; or Retry, Release,
	|               /     |     \  ExpireLease once cancel_requested
	|              v      |      v
	|      COMPLETED      |     CANCELLED  <----  Cancel (pending)
	|          |          |        |  |           EXPIRED <- Claim or Sweep of a
	|          |          |        |  |             pending task past expires_at;
	|          |          |        |  |             Replay and Archive as CANCELLED
	|          |          |        |  |
	|          |   Fail; Retry or  |  |
	|          |   ExpireLease     |  |
	|          |   when exhausted  |  |
	|          |          v        |  |
	|          |       FAILED      |  |
	|          |       |    |      |  |
	+----------|-------+----|------+  |   Replay (failed, cancelled)
	           |            |         |
	           +------------+---------+   Archive
	                        v
	                    ARCHIVED

# Allowed transitions

The table below is Transitions(); ValidateTransition enforces it before
every write, together with the per-status invariants, and refuses anything
else with a *TransitionError (errors.Is ErrInvalidTransition) and no write.

	from       event             to         performed by
	(new)      enqueued          pending    Submit
	(new)      enqueued          waiting    Submit with parents not all completed
	waiting    parent_done       waiting    the write ending a parent (others not ended; a child with at most 16 parents), or a registration recording ends
	waiting    released          pending    the write ending the last parent
	waiting    cancelled         cancelled  Cancel; a parent ended badly (on_parent_failure cancel)
	waiting    failed            failed     a parent ended badly (on_parent_failure fail)
	waiting    child_added       waiting    Submit of a child
	pending    child_added       pending    Submit of a child
	running    child_added       running    Submit of a child (the holder's next write re-applies over it)
	failed     child_added       failed     Submit of a child (so that a replay of this one lets it go on)
	cancelled  child_added       cancelled  Submit of a child (so that a replay of this one lets it go on)
	expired    child_added       expired    Submit of a child (so that a replay of this one lets it go on)
	pending    claimed           running    Claim
	running    lease_extended    running    Extend
	running    succeeded         completed  Complete
	running    retried           pending    Retry (retries left)
	running    failed            failed     Fail; Retry with retries exhausted; Snooze past MaxSnoozes
	running    timed_out         pending    ExpireLease, ReclaimLease (retries left)
	running    timed_out         failed     ExpireLease, ReclaimLease (retries exhausted)
	running    requeued          pending    Release; RequeueNow
	pending    requeued          pending    RequeueNow (available now)
	running    snoozed           pending    Snooze (snoozes left; no retry counted)
	running    cancel_requested  running    Cancel
	pending    cancelled         cancelled  Cancel
	pending    expired           expired    Claim, Sweep (expires_at <= now; no further attempt)
	running    cancelled         cancelled  AckCancel; Retry/Release/Snooze/ExpireLease/ReclaimLease after cancel_requested
	failed     replayed          pending    Replay
	cancelled  replayed          pending    Replay
	expired    replayed          pending    Replay (a passed expires_at is cleared)
	failed     replayed          waiting    Replay, or of a parent, of a task whose parents did not all complete
	cancelled  replayed          waiting    Replay, or of a parent, of a task whose parents did not all complete
	completed  archived          archived   Archive
	failed     archived          archived   Archive
	cancelled  archived          archived   Archive
	expired    archived          archived   Archive

# Snooze

A handler may put its task back for a while without using a retry
(worker.Snooze(d); an exec handler exits with worker.ExitSnooze, 79, and
may print the delay in seconds on stdout): Snooze writes running ->
pending with event snoozed, available_at = now + d, retry_count unchanged
and snooze_count + 1, over the lease like Retry (one PUT, the index moves
of Retry). The bounds keep a task from snoozing for ever: one snooze is at
most MaxSnoozeDelay (24 h; the worker clamps longer ones), and a task
snoozes at most MaxSnoozes (100) times: the snooze after that fails it
(event failed, last_error ErrSnoozeLimit). A snoozed task thus stays at
most MaxSnoozes x MaxSnoozeDelay out of the ready set in total. Replay
resets snooze_count with retry_count. A cancel requested meanwhile cancels
instead, as for Retry.

# Per-status invariants

Checked on the version about to be written (CheckInvariants), for every
status: format 1, rev >= 1, request_id set, timeout_seconds >= 1,
0 <= retry_count <= max_retries, 0 <= snooze_count <= MaxSnoozes, created_at <= updated_at, valid type,
priority and retry policy, shard = ShardOf(id), input and input_ref not
both set (output and output_ref likewise), output_ref only on completed or
archived tasks; parents within 1,000, without repeats or the task itself,
with on_parent_failure set; children within 10,000, without repeats.
Then:

	waiting    no worker_id, lease, completed_at, output; cancel_requested
	           false; some parent not ended, or one ended badly with
	           on_parent_failure cancel or fail (decided by the same write)
	pending    no worker_id, lease_id, lease_expires_at, completed_at, output;
	           cancel_requested false; available_at set
	running    worker_id, lease_id, lease_expires_at set; attempt >= 1;
	           no completed_at or output
	completed  no lease_id/lease_expires_at; completed_at set; last_error ""
	failed     no lease; completed_at set; last_error says why; no output
	cancelled  no lease; completed_at set; cancel_requested(+_at) set; no output
	expired    no lease; completed_at >= expires_at; no output
	archived   no lease; completed_at set (history of how it ended is kept);
	           archived_from, when set, is the status it was archived from
	           (required on the archiving write, and on no other status)

Across a write (prev -> next): rev grows by exactly 1; attempt grows by 1
on claimed and never otherwise; request_id is fresh; id, task_type, shard,
created_at, input, input_ref, idempotency_key and metadata never change; the parent
ids and on_parent_failure never change (only each parent's done); children
are only ever appended; updated_at never goes back.

# Task metadata

A task may carry metadata: string headers its submitter sets (qo submit
--metadata KEY=VALUE, the HTTP API's "metadata", SubmitRequest.Metadata),
stored in the task object and never changed by any later write, so
retries and replays carry them as they are. Bounds, checked at submit and
on every read (an object over them is a *MalformedError, reported and
skipped like any other): at most 32 entries (MaxMetadataKeys); keys of 1
to 64 characters (MaxMetadataKeyLen) from [A-Za-z0-9._-]; values valid
UTF-8 without control characters; keys and values together at most 4096
bytes (MaxMetadataBytes). Metadata is never indexed: it costs no request.

Reserved keys: traceparent and tracestate hold the W3C trace context of
the submit (package qotel writes them). Exec handlers get them in their
environment as TRACEPARENT and TRACESTATE.

# Actor

The audit trail is the bucket's versions; each version an operator wrote
names who in its "actor" field: a task's (set by Cancel, Replay, Archive,
RequeueNow and bulk actions, cleared by every other write, so it never
outlives the version that made it), control.json's (each pause and
resume) and a schedule's (create, enable, disable, trigger, delete; the
scheduler's own writes clear it). A workflow cancel names it on each step
it cancels; writes an action causes on other tasks (a child cancelled
because its parent was) name no one: their reason names the parent. The
interface puts the actor in the operation's context (WithActor); no
context, no actor. Who writes what:

	CLI and console    "user@host, qo COMMAND" (login and host name of the
	                   process; e.g. "alice@ops-1, qo schedule enable",
	                   "alice@ops-1, qo tui")
	qo serve (API)     "qo serve on HOST, HOW from ADDRESS": the server's
	                   host, HOW the caller authenticated (token, session:
	                   a browser's login cookie, or no token on a server
	                   that asks for none) and the connection's peer
	                   address (behind a proxy, the proxy's). Nothing the
	                   caller claims is recorded: it proves nothing.
	web UI, S3 mode    "web UI on HOST, S3 key AKIA…MPLE": the page's host
	                   and the first and last four characters of the access
	                   key it signs with (the shared operator cases keep its
	                   writes equal to the Go rules')

It is what each interface knows, not an authentication: anyone with write
access to the bucket can write any actor. S3's own access logs or
CloudTrail name the credentials of every write.

# rev, attempt and request_id

rev counts accepted writes: it orders the versions, with no gaps. History
sorts a task's versions by rev, not by the server's listing (some servers,
gofakes3, list versions oldest first); a delete marker or an unreadable
version, which has no rev, stays after the version listed before it.
attempt counts claims (a retry does not bump it; the next claim does).
request_id is a random UUID minted per logical operation. When a PUT's
outcome is unknown (timeout, connection reset after the request was sent,
5xx, or a 412 that may come from an SDK retry of a PUT that had in fact
committed), the writer re-reads the task: if it carries this request_id
the write landed and the operation succeeds without writing again; if it
is still the version the change was based on (and the error was not a
412) the PUT is sent again with the same request_id; otherwise another
writer won. So a repeated operation never counts twice.

Every If-Match write presents the ETag of the version its change was
based on, so a read must be whole: its ETag the ETag of its body. A server
that answers an old body with the ETag of the write that replaced it (a
torn read) would let a stale writer win: two workers would both claim one
task. The store checks each read's body against its ETag where the
server's ETags are body MD5s (store.ErrTornRead, see store's "Consistency
assumption"); a read that stays torn is a lost race: the task read answers
ErrConflict, a claim moves on to the next entry, nothing is written.

# Leases and fencing

Claim writes a fresh lease_id and lease_expires_at = now + timeout +
LeaseGrace (15s). It writes the lease entry first and only then turns the task running, so a
crash between the two writes cannot leave a running task that the
monitor's expiry scan does not see; the entry of a claim that lost its race
is deleted at once (or found stale and removed by the monitor). The
worker keeps the ETag of the version it wrote (Lease.ETag) and presents it
as If-Match on its next write, so Extend and Complete need no GET. Every
worker write (Extend, Complete, Retry, Fail, Release, AckCancel) is fenced
twice: the ETag must match (the object is still exactly the version the
worker wrote, which carries its lease_id), and whenever the task has to be
re-read it must still be running with the worker's lease_id. When the If-Match fails (412), the task is re-read; if
it is still running with the same lease_id (an operator's Cancel changed
the ETag, nothing else), the change is re-applied to the current version;
otherwise the lease is gone (timed out, requeued, finished) and the call
returns ErrLeaseLost having written nothing.

The monitor's ExpireLease and ReclaimLease are fenced the same way on the
lease_id of the entry they act on, and ExpireLease re-checks the expiry on
every re-application, so a lease extended in the meantime is left alone.

# Leases and liveness

The lease is the fence; the heartbeat is the liveness. qo's worker never
extends a lease:

  - timeout_seconds is a hard limit. At claim + timeout the worker cancels
    the handler (an exec handler gets SIGTERM, then SIGKILL after its kill
    grace) and writes a retry, or a failure once retries are exhausted,
    with last_error "timed out after 2s". The lease outlives the timeout by
    LeaseGrace so that the worker, not the monitor, ends the attempt; a
    handler that will not stop loses the lease at lease_expires_at and
    the monitor's ExpireLease takes the task back (the handler's late
    writes are fenced off).
  - A worker rewrites its registry entry (workers/{id}.json) every
    heartbeat interval (10s), stating its liveness bound (DeadAfter, 20s
    by default, at least twice the interval). The leading monitor walks
    the lease index every 5s (one LIST while nothing runs; one per 1,000
    running tasks) and, once some holder's newest lease entry is a quarter
    of the bound old, lists the registry (one LIST per 1,000 workers, no
    GET: an entry's LastModified is its last heartbeat by the store's
    clock). A younger holder cannot be dead yet: it claimed only while its
    last heartbeat was younger than three quarters of the bound, so a busy
    queue of short tasks pays one LIST per round. A holder whose entry is older than the
    bound plus MaxClockSkew (confirmed by one GET of the entry, which
    carries its heartbeat time and bound) is dead: ReclaimLease takes back
    every task whose lease entry names it, found by the listing, including
    those claimed after its last heartbeat. A holder with no entry at all
    (deregistered, pruned) is dead once the claim is older than the bound
    plus MaxClockSkew. A SIGKILLed worker's tasks are therefore pending
    again within DeadAfter + MaxClockSkew + the lease check interval of
    its last heartbeat: 27s with the defaults, whatever the tasks'
    timeouts, and the happy path pays nothing for it (a claim whose
    writes took longer to land than the quarter of the bound moves this
    by as much).
  - A worker restarted under the same id (a StatefulSet pod, a systemd
    unit) before that bound heartbeats again under the id, so the monitor
    sees the earlier process's tasks held by a live worker. The new
    process reads its id's registry entry before it registers (one GET)
    and lists the lease index (one LIST per 1,000 running tasks) for the
    entries naming its id, all the earlier process's since it has claimed
    nothing yet, and takes them back (ReclaimLease, fenced on each lease
    id) once the entry's last heartbeat is DeadAfter + MaxClockSkew old by
    its clock; with no entry left (the earlier process deregistered with a
    task it could not release, its store failing as it shut down, or the
    entry was pruned) or a malformed one, once that bound has passed since
    the restart. The look is retried for up to 30s; a look that keeps failing
    stops the start, as a failed registration does. A restart under the
    same id thus brings the tasks back within the bound above (or at the
    restart's listing, if later), as a kill without restart does. Two
    live processes of one id are a misconfiguration this does not cover.
  - A lease round lists at most 100,000 entries (100 pages). A larger
    lease index is walked in parts: each round goes on where the last
    stopped, wrapping from the last shard to the first, so every entry is
    checked (an expired lease taken back, a dead holder's task reclaimed)
    within ceil(M / 100,000) rounds, M the lease entries the index holds
    over those rounds; the lease check interval in the bound above counts
    that many times. A round costs at most 101 LISTs (one more when it
    wraps); the position lives in the leading monitor only, so a new
    leader starts at the first shard. Below 100,000 running tasks every
    round lists the whole index from the first shard, as before.
  - A worker that is only slow (a long pause, a partition) knows when its
    last heartbeat landed: once that is three quarters of DeadAfter old
    (15s by default) it stops every handler, releases each task where its
    lease still holds (fenced, so nothing is written where the monitor
    already took it back) and claims nothing until a heartbeat lands
    again. A handler that stops within the last quarter of the bound (an
    exec handler's kill grace, 5s by default) has ended before the monitor,
    even with its clock MaxClockSkew ahead, may run the task elsewhere.
    The worker therefore refuses a kill grace longer than a quarter of
    DeadAfter, or than LeaseGrace less MaxClockSkew less 3s for the retry
    write (10s; the timeout's margin above), so that no setting lets a
    handler that ignores SIGTERM overlap the next attempt.
  - A worker that shuts down releases a task only once its handler has
    returned: past its shutdown timeout it stops the handler (an exec
    handler gets SIGTERM, then SIGKILL after its kill grace) and releases
    the task after the process exited, never while the attempt still runs.
    A Go handler that ignores its context cannot be stopped: its task is
    not released while it runs, and comes back when it returns, when its
    lease expires (ExpireLease), or, when the worker is aborted, once the
    worker's heartbeat is DeadAfter + MaxClockSkew old. A worker killed
    with SIGKILL takes its exec handlers along on Linux (a parent-death
    signal); elsewhere a handler can run on as an orphan after its task was
    taken back (see docs/reliability.md).
  - A claim whose outcome stays unknown (the task PUT's response and the
    re-read both lost) may have left the task running under the worker's
    lease unknown to the worker, which the monitor would not take back
    before the lease expires, a whole timeout later. The worker re-reads
    the task (ResolveClaim, 1 GET) 1s later, then at doubling intervals up
    to its heartbeat interval, until the store answers; if the claim landed
    it releases the task (fenced). So the task is pending again within a
    heartbeat interval (10s) of the store answering again; while it does
    not answer, the worker's heartbeats do not land either, and the task
    comes back with the dead worker's, within DeadAfter + MaxClockSkew +
    the lease check interval.
    A task whose final write (its outcome, or its release after the
    worker stopped its handlers without a landed heartbeat) failed on
    every try is in the same place and is released the same way.
  - While a handler runs longer than the lease check interval (10s), the
    worker re-reads its task that often (CheckLease: one GET, no write) to
    see a cancel request or a lost lease.

Every interface shows worker health by this same rule (monitor.Judge):
a worker is dead once its heartbeat is older than its DeadAfter plus
MaxClockSkew (22s by default), the age at which its tasks are taken back,
and stale from three quarters of DeadAfter (15s), the age at which it
stops its own handlers without a landed heartbeat. A SIGKILLed worker is
shown dead within DeadAfter + MaxClockSkew of its last heartbeat, so
within 22s of the kill with the defaults.

Cancel of a running task sets cancel_requested; the worker learns it from
CheckLease (ErrCancelRequested, the lease stays valid), stops the handler
and calls AckCancel. A task whose worker dies is taken back by
ReclaimLease or ExpireLease, which cancel instead of retrying. Complete
still wins when the work finished.

# Every task finishes

Safety (nothing lost, applied twice or overwritten) comes from the rules
above; liveness from these bounds, with the defaults:

  - a pending task is in the ready index at every instant (see Index
    entries are written first), so a worker serving its type finds it;
  - a running task is in the lease index at every instant, so the lease
    check finds it: it is pending again (or failed, or cancelled) at most
    its timeout + LeaseGrace after its claim, and within DeadAfter +
    MaxClockSkew + the lease check interval (27s) of its worker's last
    heartbeat if the worker dies; a task the worker itself can no longer
    write (a claim or final write whose outcome stayed unknown) within a
    heartbeat interval (10s) of the store answering again;
  - a waiting task is released by the write that ends its last parent
    (or, more than 16 children, by that writer in the background after
    it, within 2 minutes plus 20 ms per child past 1,000), or by the
    sweeper within a sweep interval (5 minutes) per 1,000 waiting tasks
    when that write was lost; a task nobody serves (paused, no worker of its type) expires at
    its expires_at through the sweeper within one pass;
  - order: with a free slot in a worker that serves its type and polls
    its shard, a ready task is not passed for long by newer tasks of its
    priority, whatever the depth of the ready index (a worker keeps a page
    of every partition it polls, its types' in its shards, and claims
    oldest first across all of them; a type at its limit or paused is not
    listed, and holds nothing back): a task its worker's held view does
    not hold yet (ready after its partition's page was listed, ranked
    before what the page holds) within a
    page hold and a poll wait (10s + 6s, plus the walks that list the
    pages due before it, 4 LISTs each); behind another worker's share,
    within 2 x 5/4 page hold and a poll wait (31s) of this worker passing
    it while it was ready (one that became ready after the worker passed
    its rank, as a task ranked before a low-priority one started while
    nothing else waited, was not passed); the rule and its bound are in
    worker/poll.go ("Polling"), and the fleet simulation holds whole
    fleets to 40s.

The fleet simulation (worker/sim) runs the real worker, monitor and queue
code of whole fleets in simulated time, with crashes, partitions, lost
responses, slow requests, rolling restarts and operator actions, and
checks these at every tick and on every task's history: no task lost,
every pending, running, waiting and failed task indexed, none completed
twice or overwritten, no two runs of a task at once, every task ended
within a drain bound once the faults stopped, and no task overtaken past
the order bound. docs/reliability.md reports its runs.

# Dependencies

A task submitted with parents (SubmitRequest.After, qo submit --after)
runs after them. Submit reads every parent (1 GET each; an unknown id is
refused and nothing is written). When all completed already, the task is
pending at once. Otherwise it is created waiting: its waiting entry
waiting/{shard}/{id}, then the task (create-only), then, for each parent
that has not ended, a child_added write appending the child to the
parent's children (rebased over concurrent writes; a running parent's
holder re-applies its own next write over it, as over a cancel request).
A parent that ended failed, cancelled or expired gets the same write
(unless on_parent_failure is run), so that replaying it lets the child go
on; a completed or archived one is not written.
A parent found ended in that write, or before, is recorded on the child at
once.

Nothing polls a waiting task. The write that ends a parent (completed,
failed, cancelled or expired, by a worker, the monitor or an operator)
is followed, once it landed, by telling each child. A child with at most
16 parents gets one write (GET + conditional PUT, rebased over other
parents doing the same): the parent's end is recorded in the child's
parents. A child with more parents gets that write only when this end
decides it (the last one its object does not record, or one that
decides by on_parent_failure below); otherwise the end is an edge
object, edges/{child}/{parent}/{status} (empty), then the child's edges
are listed (1 LIST: a child has at most 1,000 parents) and the child is
read again: the writer that finds every end there records them all in
one write. Every writer that records an end on such a child lists its
edges after its write, and a writer of an edge reads the child after
writing it, so of any two ends the later writer sees both: the last end
is never left unseen. The write that records the last end releases the
child: pending, available now (its ready entry is written first, its
waiting entry removed after), event released. A child decided so (or
by a parent that ended badly) has its edge objects removed after the
write: it records those ends itself now. Until then its object lags
behind its edges; Get shows them (1 LIST), and Submit's registration
and the sweeper take an edge for its parent's end without reading the
parent. A parent with more than 16 children tells them in the
background: its write returns in the time of one write, and the
process keeps telling them (16 at a time) for at most 2 minutes plus
20 ms per child past 1,000 (Queue.Settle waits for it; a worker waits
for it at shutdown within its ShutdownTimeout, the qo command before it
exits for at most 2 minutes). A parent that
ended otherwise decides the child's fate at once by on_parent_failure:
cancel (default; cancel_reason names every parent recorded as not
completed: "parent ID failed", or "parents ID1 failed, ID2 cancelled",
the first 10 and how many more), fail (a dead letter, last_error the
same) or run (counted as ended; the child runs once every
parent ended). A cancelled or failed child tells its own children in turn.
Parents ending at once all rebase onto the child, as often as it takes
(each lost race is another parent's end that landed): each end is
recorded once and exactly one write releases it. So do children
submitted at once onto one parent with their child_added writes.

Cost of one edge: 1 GET at submit, 1 GET + 1 PUT on the parent
(child_added) unless it had already completed, and when the parent ends
1 GET + 1 PUT on a child with at most 16 parents, or, on a wider one,
1 PUT of an empty edge object, 1 LIST and 2 GETs of the child (the bytes
a parent's end writes do not grow with the fan-in); the release adds
the child's write (once, or once per last writer in flight), its ready
entry PUT and the waiting entry DELETE that any submit and claim would
pay, and a DELETE per edge object. Writers racing on one task (parents
of a narrow fan-in ending together, children submitted together after
one parent) pay a refused PUT and a re-read per lost race:
docs/performance.md measures it.

Replay of a parent that ended badly puts the children it cancelled or
failed (their reason names it) back to waiting, and theirs in turn: once
none of the other parents their reason names is still failed, cancelled
or expired (1 GET each; while one is, the child is left as it is and that
parent's replay brings it back), every parent not recorded as completed
is waited for again and the child registers anew as at submit (1 GET per
parent): ends that happened meanwhile are recorded, and one that is bad
again decides at once. So a child two parents cancelled comes back at the
replay of the second, in either order, also when the two ended at once
and only one end reached it.
Replay of such a child alone waits again for its parents: one still
failed decides at once by on_parent_failure again.

Faults: the child's waiting entry is written before it, so a waiting task
is always in the index. A submit that dies before telling a parent
leaves a waiting task the parent does not know, and a writer that dies
(or stops telling in the background) between a parent's end and the
child's write or edge, or between an edge and the listing after it,
leaves a parent's end unrecorded: the same submit repeated with its
idempotency key finishes the first, and the sweeper finishes both
(SweepWaiting: each round of the monitor's sweeper reads one page of
waiting/ and, for every waiting task, its edges (1 LIST, children with
more than 16 parents) and the parents that have not ended and left no
edge; it tells a parent that does not list the child and records an end
no child heard of, releasing the child when its edges hold every end).
So a missed release is repaired within one round of the sweeper over the
child's page of waiting/: a sweep interval (5 minutes by default) for
each 1,000 waiting tasks. Its cost is one LIST per 1,000 waiting tasks
plus a LIST per wide child and their parents' reads, whatever the
bucket's history.

Edge objects came with no change to any object: nothing to migrate. A
waiting task's parents list is read as before, and edges only add ends
to it. A qo of an earlier version ending a parent of a wide child writes
the child as before; when that write holds the last end it does not see
the edges, and the sweeper releases the child (within the bound above).
The web UI's operator actions follow the rule above (webui/src/backend.js,
endOnChild), except that a child taking values (input_from) from a
parent whose end it finds in an edge is left to the sweeper, which copies
them.

# Workflows

A workflow is a set of named steps, each a task with the steps it runs
after (Workflows.Submit, qo submit --workflow FILE). Its record,
workflows/{shard}/{id}.json, is written once (create-only) before any of
its tasks: the steps, their task types and their task ids (UUIDv7 ids
chosen up front). Then the tasks are created, each only after every task
that waits for it (steps without children first, roots last), and each
created knowing its parents and its children: no child_added writes, and
no task can end before its children exist to hear of it. A submit that
stops half-way leaves waiting tasks whose parents are missing and,
possibly, some roots: nothing whose children are missing can run. The
idempotency key (the file's, or one Workflows.Submit picks and the error
names) binds to the workflow with a create-only marker in idempotency/
(the hash of NUL "workflow" NUL key, apart from the tasks' markers):
submitting the same steps with it again returns the workflow and creates
the tasks still missing (create-only: existing ones are left as they
are); other steps under the same key are ErrIdempotencyMismatch. A
submit never repeated leaves waiting tasks whose parent does not exist:
the sweeper cancels them OrphanAfter (1 hour) after their creation, with
a reason naming the missing parent. A name,
when given, points at the latest workflow submitted with it
(workflow-names/{name}.json, overwritten after every task exists).

A workflow has at most 1,000 steps and 10,000 edges (see Size limits).
Cost: per step what its task's submit costs (2 PUTs, plus an offloaded
input), the marker and the record (2 PUTs) and the name (1 PUT). Each
edge costs what it costs when the parent ends, as above.
Reading a workflow is 1 GET for the record (2 by name) and 1 GET per step;
waiting on it re-reads only the steps that have not ended.

input_from: a step may take values of its parents' outputs, e.g.
{"rows": "extract.output.rows"} (STEP.output, or STEP.output.PATH with
dot-separated keys and array indexes; a step named there runs after that
step). The task keeps input_from with the parent's id, so the rule travels
with it. The write that records a completed parent's end on the child also
records the values it takes from that parent's output in from_parents
(reading an offloaded output once: 1 GET). The input itself never
changes: the worker hands the handler the input object with those fields
set (HandlerInput); a path the output lacks gives null, and so does a
parent that did not complete (on_parent_failure run). A value over 64 KiB,
or over 256 KiB together, fails the child with a last_error saying to pass
a reference to the data instead.

A workflow's status comes from its steps: incomplete (a task is missing:
the submit stopped half-way, or retention expired it), running, completed,
failed (every step ended, one failed or expired) or cancelled.
Workflows.Cancel cancels every step that has not ended. Workflow records are
small and are not expired by retention.

# Clock and skew bound

All times come from the queue clock: by default the store's estimate of
the server's time (from response Date headers), never the local clock, so
hosts with wrong clocks agree. That estimate is good to about a second
plus one round trip; two processes therefore disagree by at most
MaxClockSkew. Within one process it never goes back by the estimate's
own movement as responses narrow it (a task a worker listed as available
stays available to its claim); it follows a server clock set back by more
than two seconds. The worker ends an attempt at claim + timeout by its own view
of the queue clock, LeaseGrace (15s: MaxClockSkew plus an exec handler's
kill grace, which the worker holds to at most 10s, plus 3s for the retry
write) before the monitor
expires the lease at its own now >= lease_expires_at; it stops its handlers
at three quarters of DeadAfter without a landed heartbeat, while the
monitor judges it dead only at DeadAfter + MaxClockSkew (see Leases and
liveness). So two attempts overlap only when a worker overruns these
margins. If a worker still
overruns (a GC pause, a stalled network), fencing rejects its late writes:
the worst case is that a handler runs twice (at-least-once execution),
never that a state change is lost or applied twice. Delayed tasks may be
claimed up to MaxClockSkew early.

# Index entries are written first

The ready, lease and dead-letter entries make "what can I claim?", "which
leases expired?" and "what failed?" cheap to answer; the task object
decides everything. Every transition (apply) maintains them in one order:

 1. PUT the entries the new version needs and the old one lacks. If one
    fails, the operation fails and the task is not touched.
 2. PUT the task (If-Match, or create-only on Submit).
 3. Once the task write is known to have landed, DELETE the entries only
    the old version needed. A failed DELETE leaves a stale entry.

When the task write's outcome stays unknown (a lost response whose re-read
failed too), every entry, old and new, is left in place. When it certainly
did not land (a 412 from another writer, a fencing refusal) the entries
this call wrote are deleted again, except any the current version needs.
So after any single crash, lost response or failed re-read, a pending task
has its ready entry, a running task its lease entry and a failed task its
dead-letter entry: the entry was there before the task changed, and it is
removed only after the task certainly left that state. Nothing waits for a
sweep. The price is that a writer that loses (a stale worker, a claim race)
has written an entry it then deletes: 1 PUT + 1 DELETE more, never a wrong
state.

Readers meet stale entries (the task is gone, in another state, or keyed
differently): Claim, ExpireLease, List and Sweep skip them and delete them
once they are older than IndexGrace (1 minute, by the entry's
LastModified from the listing and the queue clock). A younger entry may
belong to a write in flight, so it is kept. A writer whose entry PUT and
task PUT end up more than IndexGrace/2 apart writes the entry again after
the task PUT, so a reader can never delete an entry a landed version needs.
A reader that deletes a ready entry of a task still pending writes the
task's own entry first (1 PUT, only then): the entry it removes may have
been the only one.

A ready entry whose type or priority is not its task's was never written
by qo (neither ever changes): it was written by hand or restored from
elsewhere. Claim refuses it with ErrEntryMismatch (which also matches
ErrConflict, so a worker treats it as a stale entry) and deletes it at
once, whatever its age: a worker never runs a task through a key of
another type, past that type's pause or its own limits. The rank needs no
such check: the task's available_at alone decides when it may be claimed,
so an entry ranked earlier does not make it claimable sooner.

# Listing

List never costs in proportion to the bucket's history:

  - pending, running and failed tasks come from their indexes: 1 LIST per
    1,000 entries passed, 1 GET per task shown (ready and lease entries in
    shard order, each shard oldest first; dead letters newest first);
  - every other status, and a list of all statuses, shows the tasks
    CREATED in a window (default the last DefaultListWindow, 24 hours),
    newest first: ids are time-ordered, so each shard's listing starts at
    the window's first id and stops at now. 1 LIST per shard and per 1,000
    tasks in the window, 1 GET per task read. Tasks of layout 1 (random v4
    ids) are not in windows; the indexes and Get still find them;
  - FindByIDPrefix finds tasks by the first digits of their id (the
    console's and the API's search): task keys are the ids, so 1 LIST per
    shard of limit + 1 keys does the matching (1 LIST in all when the
    prefix shows a random id, whose first characters are its shard);
  - ResolveID turns the short id lists show (ShortID: the END of a v7
    id) into the task, for every command, search box and API route. The
    end of a v7 id holds its shard, so only that shard is looked in: its
    ready partitions (one per type, walked as ListReady walks them),
    lease and waiting indexes, its tasks created in the last
    DefaultListWindow (one key range), and the newest dead letters, at
    most resolvePages LISTs of 1,000 keys each (5 LISTs in all for a
    small queue, whatever the history). Several matches are an
    ErrAmbiguousID naming them; no match falls back to FindByIDPrefix.

Workers list the ready index with ListReady: one LIST walks the wanted
partitions (the types it claims now, in the shards it polls) in key order
and skips the rest of a partition's section (a task key's, or its entries
without a key; see Task keys) at its first entry that is not due, so an
idle queue costs one LIST per poll whatever the number of types and
shards (plus one per section holding more than a page of delayed
entries). The LIST's prefix is the one partition wanted, or the one
type's ("ready/{type}/") when only one type is; a LIST that runs into a
partition not wanted hops past it (past all of a type not wanted), so
another type's backlog costs at most one LIST per walk, whatever its
depth. qo list of one shard's pending tasks walks every type's partition
of that shard the same way.

# Counting

A StatsCounter counts pending (and delayed), running and failed tasks from
the keys of the three indexes alone (the shard and type are in every key),
at most MaxIndexPages LISTs of 1,000 keys each per index, and finishes per
minute from the workers' heartbeats (WorkerInfo.Recent: each worker counts
its own completions and failures by minute). Dead-letter keys sort newest
first, so between full counts (every DeadRecount, a minute) a refresh reads
only the keys of new failures, and a replay or archive shows in the count
up to a minute late. It reads no task object and keeps one entry per
worker, so a refresh costs 3 LISTs plus 1 LIST and 1 GET per changed
heartbeat, with 0 or with millions of finished tasks.
Lifetime totals of completed, cancelled, expired or archived tasks are not
counted (Stats.Counted says which counts are real).

Words: a dead letter is a task in status failed (the dead index, the
failed count); a failed attempt is one run of a handler that ended in an
error, retried or not (the per-minute failed counts). The interfaces name
them apart.

# Throughput rollup

A worker's heartbeat carries its finishes of the last
DefaultRecentMinutes minutes only, so a restart of the workers would
erase the fleet's recent throughput. The leading monitor keeps it: at
every worker-health check (CheckInterval, 30s) it folds each registered
worker's per-minute counts into monitor/throughput/{YYYY-MM-DDTHH}.json,
one object per UTC hour (throughput.Hour: package queue/throughput owns
these objects). A minute keeps each worker's count (the larger of the kept and the newly read, so reading a heartbeat
twice counts it once) while heartbeats may still carry it, for
throughput.OpenFor (16 minutes) after its start; then only its totals.
An hour object is at most 60 minutes of totals plus 16 open minutes of
per-worker counts. The leader writes an hour object only when it changed
(at most 2 PUTs per check, the minutes a heartbeat carries spanning at
most two hours: at most 5,760 PUTs a day, about $0.86 a month at S3
Standard prices, less on an idle queue, which writes none), GETs one
once when it first folds into it as leader, and once an hour deletes the
objects older than throughput.Keep (7 days; 1 LIST, DELETEs are free), so
at most 169 exist. Each write leaves a noncurrent version, expired after
a day by the lifecycle rule of monitor/ (see Retention). Finishes a
worker made after the leader's last read of its entry and before it
stopped cleanly (deregistering) are lost: at most CheckInterval of them.
A reader (package inspect, the web UI) lists the hours of the last day
(1 LIST starting after the day's first hour: at most 25 keys whatever is
kept) and GETs only those whose ETag changed since it last read them,
merging them with the live heartbeats (each worker's open minute counted
once, at the larger of its two counts).

# Following, waiting, bulk submits and bulk actions

An event has one name everywhere (History, Follow, qo tail, the console,
the HTTP API): the one of Events that the write recorded in last_event,
or, for an object without one, the one its status change implies.

Follow (qo tail) reports the events of given tasks, or of the whole queue:

  - given tasks: first each task's history (1 LIST-VERSIONS + 1 GET per
    version of it; 1 GET from now on only), then per poll 1 GET per task
    that has not ended, and for a task written more than once since the
    last poll its history again, so that no write is missed;
  - the whole queue: per poll 1 LIST per 1,000 ready entries and 1 per
    1,000 lease entries (2 LISTs while idle) and 1 GET per task whose
    entry appeared, moved or vanished. Writes between two polls coalesce
    into the task's latest event; writes that change no ready or lease
    entry (a cancel request, archiving, a waiting task's writes) are not
    seen. An entry listed before its task is written (entries come first)
    is read again at every poll until the task is found, or IndexGrace
    after it first was not (a stale entry): a submit met halfway is
    reported, not missed.

Wait (qo wait) reads, per round, each task that has not ended (1 GET);
rounds stretch from its interval to its maximum while nothing changes. An
archived task counts as the status it was archived from: its
archived_from, or (archived before that field) 1 LIST-VERSIONS + 2 GETs,
once. SubmitBulk (qo submit --file) is one Submit per line, at
most 16 (up to 256) at once; lines repeating a type and idempotency key
are sent once. None of them reads anything in proportion to the finished
tasks: the same requests with 0 or with 10,000 of them (asserted in
tests).

Bulk actions (qo cancel|replay|archive with several ids or a filter, the
console's marked tasks, POST /api/tasks/bulk, and so the web UI through
qo serve) are the single-task action on each task, never another rule.
PlanBulkAction reads the tasks, 1 GET per id, or a filter's List pages
(per status walked: the cost of List, 1 LIST per 1,000 index entries or
window keys + 1 GET per task read), at most MaxActPlan tasks, and applies
the action's rule in memory: each task is planned once, and those the rule
refuses or that the action would not change are skipped, with the reason.
It writes nothing (a dry run stops there). ActPlan.Run writes each
planned task with If-Match on the ETag it was read with (no second GET),
DefaultActConcurrency at a time: 1 PUT + the index entries the change
needs (cancelling a pending task: 1 PUT + 1 DELETE, 500 of them 1 LIST +
500 GET + 500 PUT + 500 DELETE in all). A task changed since it was read
is read again and the rule applied again (1 GET more): one that no longer
allows the action is skipped ("changed meanwhile"), never forced. A
storage error or the end of the context stops the run; the same action
again is safe, as what is done is skipped.

# Sweeper

The leading monitor's sweep is a safety net with a stated bound, not a
mechanism: index entries are never missing after a single fault (above).
Each round (every SweepInterval, 5 minutes by default, in a loop of its
own so it never delays the expiry check) lists one page of 1,000 ready
entries from the position kept in monitor/sweep.json (so a new leader
resumes the pass) and reads only the tasks of entries that are available
and older than SweepIdle (1 minute): entries no worker claimed, because
their type is paused or served by no worker, or because they are stale.
Such a task past its expires_at becomes expired, and a stale entry is
deleted. A ready entry of an older key layout older than SweepIdle is
converted (see Key layout; 1 GET + 1 PUT + 1 DELETE). Bound: a pending
task nobody claims is expired, a stale ready entry removed and a stray one
of an older layout converted, within one pass, ceil(ready entries / 1,000)
rounds; a round costs 1 LIST + 1 PUT (the position) + 1 GET per idle
entry, whatever the number of finished tasks. Stale lease entries are
removed by the expiry check when they expire (within ceil(lease entries /
100,000) lease rounds of it, see Leases and liveness), stale dead-letter
entries by the listings that meet them. Entries lost to damage from outside (objects deleted by
hand, a partial restore) are rebuilt by Repair (`qo repair`), which reads
every task object once: the one operation whose cost is the history, run
only when asked.

# Progress

A handler reports how far its attempt got: a fraction from 0 to 1 and a
message of at most MaxProgressMessage (200) bytes of UTF-8 without control
characters (ValidateProgress; a bad report is refused with ErrInvalidInput,
an exec handler's malformed line is skipped). Go handlers call
worker.ReportProgress(ctx, fraction, msg); exec handlers write lines
"0.42 message" or "42% message" to the file QO_PROGRESS_FILE names
(appending or overwriting), of which the worker reads the last complete
line (in its last 4 KiB) at each heartbeat.

Cost: a report is a memory write in the worker and never a request. The
registry entry the heartbeat rewrites anyway (1 PUT per HeartbeatInterval,
10s, whatever the number of tasks or reports) carries the latest report of
each running task that made one: "progress": {task id: {attempt,
fraction, message, at}}, at most concurrency entries of about 300 bytes.
So a task's progress costs no write of its own, and what readers see is at
most one heartbeat interval old. A reader finds it with one GET of the
entry of the worker the task's worker_id names (registry.TaskProgress: only for a
running task, and only a report of the task's current attempt; a missing
or malformed entry or report shows no progress). qo status and GET
/api/tasks/{id} pay that GET; listings do not read it.

When the attempt ends the progress is dropped, not kept in the final task
write: it describes a running attempt, and the final state (output,
last_error) says how it ended; keeping it would add a field to the stored
task for little. The task object never holds it (EncodeTask leaves
Task.Progress out, DecodeTask ignores it).

# Requests and storage per task

Happy path (asserted in tests, so a regression fails CI):

	Submit    2 PUT (ready entry, task create-only); with a key 3 PUT
	Claim     1 GET + 2 PUT (lease entry, task If-Match) + 1 DELETE (ready entry)
	Complete  1 PUT (task If-Match, ETag from the claim) + 1 DELETE (lease entry)

plus the worker's share of the LIST over ready/. Under a retention, the
write that finishes a task with an idempotency key costs 1 PUT more (its
marker rewritten tagged finished, see Idempotency keys): a keyed
Complete is 2 PUT + 1 DELETE; so does a replay of a finished keyed task
(tagged live again). A handler that runs
longer than the lease check interval costs 1 GET per interval (CheckLease);
Extend, which qo's worker never calls, costs 1 PUT + the lease entry move
(1 PUT + 1 DELETE); Retry and Release cost 2 PUT (new
ready entry, task) + 1 DELETE (lease entry), Fail 2 PUT (dead-letter
entry, task) + 1 DELETE. An operator action costs 1 GET + 1 PUT + its index
changes. A write whose response is lost costs 1 extra GET (the re-read); a
lost claim race costs its GET, and when the task changed between the read
and the write also the lease entry it wrote (1 PUT + 1 DELETE).

With versioning every write keeps the old version. One task that succeeds
first time leaves 3 task versions (pending, running, completed; each about
1 KB plus the input, and the output on the last), 2 empty index versions
and 2 delete markers. Each extension adds 1 task version, 1 index version
and 1 delete marker; each retry adds 2 task versions and 2 of each index
kind. Index and registry churn is worthless after a day, and many delete
markers slow LIST on some providers, so qo init installs lifecycle rules
(LifecycleRules): under ready/, leases/, dead/, workers/, shard-leases/
and monitor/ noncurrent versions expire after 1 day and expired delete
markers are removed. Tasks are kept as described under Retention.
Providers without lifecycle support get a warning (qo doctor explains the
manual clean-up) instead of a failure.

# Retention

Without a retention (the default) every task object, every version of it
(its history), its payloads and idempotency markers are kept forever.
qo init --tasks-retention-days N records N in queue.json
(tasks_retention_days) and installs lifecycle rules; from then on every
task write tags the version in the same PUT (no extra request):
qo-retention=finished for completed, cancelled, expired and archived
versions, qo-retention=live for the others (a tag is written on every
version because some servers keep a version's tags across an untagged
overwrite). The rules then expire, N days after they were written:
current task objects tagged finished, offloaded outputs (tagged finished
when written), idempotency markers tagged finished (rewritten so when
their task finishes, see Idempotency keys), and every version replaced
under tasks/ and data/ (N days after it was replaced; under idempotency/
after 1 day). So a finished task, its history and its idempotency key are
gone about N days after it finished; a failed task (a dead letter) stays
until it is replayed or archived, and a waiting, pending or running task
is never expired, nor is its key. An offloaded input is not
tagged (it is written before the task exists) and stays: delete data/
objects of expired tasks by hand if that matters. Expiry on a versioned
bucket leaves a delete marker, which the same rules remove. Running init
again with another N (or 0) changes queue.json and the rules; versions
written before keep the tags they had. Lifecycle rules act about once a
day (AWS, MinIO); versitygw has no lifecycle rules (qo doctor says so).
The credentials of writers need s3:PutObjectTagging when a retention is
set.

# Priorities

A task is high, normal (the default) or low. Its ready key sorts under its
rank: available_at - PriorityStep for high, available_at for normal,
available_at + PriorityStep for low (PriorityStep is 15 minutes). Workers
claim the entries they read in rank order across shards (ReadyEntry.Rank;
within one millisecond the higher priority first). So a high task goes
ahead of normal tasks that became available less than 15 minutes before it
and of low ones up to 30 minutes before it, and an idle queue runs a low
task at once (the listing looks PriorityStep past now). No level starves: a task is never
passed by one that became available more than 2 x PriorityStep after it.
A retry or requeue keeps the priority.

A worker serving several types may weigh them (run-worker --types
a=6,b=3,c=1, worker.Options.Weights): while its slots are all taken and
several types have entries it could claim, the types take turns in
proportion to their weights (a smooth weighted round robin), each claimed
in the rank order above. It reorders only what one worker claims first;
with a free slot every claimable entry is claimed, so the order bounds of
"Every task finishes" hold as stated (see worker/weights.go).

# Expiry

expires_at is a deadline for starting. A pending task past it is never
claimed: Claim turns it expired (and removes its ready entry) instead, and
the monitor's Sweep expires pending tasks nobody tries to claim (a paused
type, a type no worker serves). A running task is not affected, but the
deadline bounds every start: a task waiting to retry past it expires too.
Replay runs an expired task after all, clearing the deadline.

# Large payloads

An input or output larger than the offload threshold (Options.
OffloadThreshold, 256 KiB by default, at most MaxInlinePayload, 1 MiB:
see Size limits) is stored in its own object,
data/{shard}/{id}/input.json or output-{lease_id}.json, and the task
carries input_ref/output_ref {key, version_id, bytes, sha256} with
input/output null. Submit writes the input object first (create-only; an
identical one left by a submit that crashed is reused), then the task;
Complete writes the output object of its own attempt (keyed by its
lease_id), then the fenced task write. A worker that lost its lease thus
writes an object no task points at, never the winner's (and removes it once
its Complete is refused); version_id and sha256 still pin what the task
points at. Tasks written before outputs were keyed by attempt point at
output.json, which stays readable.
LoadPayload and WithPayloads return the JSON either way: workers
hand it to handlers, and the CLI, console, web UI and HTTP API show it.
An offloaded submit costs 1 PUT more, and reading the payload 1 GET.

# Size limits

A task's input and its output are each at most max_payload_bytes bytes
(queue.json, set by qo init --max-payload-bytes; DefaultMaxPayloadBytes,
64 MiB, when absent), for every writer and reader of the bucket, since
every one reads queue.json. Submit refuses a larger input and Complete a
larger output with ErrInvalidInput naming the size, the limit and how to
raise it, before anything is written; the worker fails a task whose
handler returned a larger output, permanently (the same output would be
refused again), with the limit in last_error.

Every reader refuses an object over the bound of its kind before loading
it (store.GetLimited: the size the server announces is checked before the
body is read, and no more than the bound is read whatever it announced):

	task objects and their versions   6 MiB (2 x MaxInlinePayload + 4 MiB)
	schedules (a template with input) 2 MiB (MaxInlinePayload + 1 MiB)
	offloaded payloads (data/)        the bytes of their reference, at most max_payload_bytes
	workflow records                  16 MiB
	throughput rollup hours           8 MiB (open minutes count per worker)
	everything else (queue.json,      1 MiB
	  worker records, named leases,
	  control.json, sweep state,
	  idempotency markers, workflow
	  names, index entries)

A task object holds an input or output of at most MaxInlinePayload
(1 MiB) inline: every writer offloads larger ones (the offload threshold
cannot exceed it), so a task object's size does not grow with the payload
limit. A schedule's input is at most MaxInlinePayload too, refused at
creation.

An object over its bound is a *MalformedError wrapping store.ErrTooLarge
that names the key and the bound: single reads return it, listings, stats,
repair and workers report it and skip it (as any malformed object), and
nothing loads it. Lowering max_payload_bytes below the size of existing
payloads makes them unreadable until it is raised again.

A workflow file has at most MaxWorkflowSteps (1,000) steps and
MaxWorkflowEdges (10,000) after entries in all, refused before any write:
each step costs a few requests (see Workflows).

# Pause

control.json holds the pause switches: the whole queue ("paused") and
single types ("paused_types", each with when and why); "actor" names who
wrote the version (see Actor). Workers claim
nothing of a paused type: before claiming what a listing found they re-read
it when their copy is older than a second (1 GET), and while a type they
serve is paused they re-read it every few seconds to notice the resume
instead of listing. An idle worker with nothing paused never reads it.
Tasks already running finish and submits are still accepted. Like every shared
object it is compared-and-swapped (created with a create-only PUT), never
deleted.

# Fleet-wide concurrency caps

control.json's "limits" holds a cap per task type ({"concurrency": N,
"set_at": ...}, set by qo limit): at no instant do more than N handlers of
the type run across every worker, through workers joining, draining, being
paused and being killed. Nothing is written per task: the cap is held by
shares that ride on the heartbeats.

A share is named in the holds by its type, and a share of another kind of
limit by a prefix and its type ("rate:TYPE", "key:TYPE", "keyrate:TYPE",
HoldKey). So no limit may be set on a type whose name begins with one of
those prefixes (HoldPrefixed; a cap on "rate:x" would be read as the rate
of "x"): every setter refuses it with ErrInvalidInput naming the prefix.
A worker that finds one in control.json all the same (written by hand,
or by a qo from before this rule) holds no share of it and claims none of
that type's tasks, logging why, so no limit is passed; clearing it (qo
limit TYPE --clear) is allowed.

  - Each worker serving a capped type publishes in its registry entry
    ("holds": type -> count, written with every heartbeat) the share it
    holds, and runs (its claims in flight counted) at most its usable
    share, which is never above any value of its holds another worker may
    read: the one in the bucket, or one being written.
  - Target: N split evenly over the live workers serving the type (by the
    registry, a worker is live until its heartbeat is DeadAfter +
    MaxClockSkew old), the remainder to the first: those serving fewest
    types (by their registry entries), then with most slots, then by id,
    so that where the cap has fewer units than workers its units go first
    to the workers likeliest to use them (one dedicated to the type, over
    one whose slots older tasks of other types may keep full); a
    worker that runs fewer of the type (its concurrency, or its own
    --limit of it, both in its registry entry) gets that many, and what it
    leaves is split over the others the same way, so the fleet runs up to
    N when its workers can. Every heartbeat lists the registry (1 LIST; 1
    GET per worker id not seen before, for the types it serves) and
    publishes max(target, running). The workers split the type's ready
    entries in proportion to these targets (weighted rendezvous hashing,
    worker/peers.go), a worker with a target of 0 taking none, so no
    entry waits on a worker that may not run it. A qo from before this
    order split by id alone: in a fleet of both (a rolling upgrade) the
    targets may sum to more than N, and then a raise waits for its
    confirmation (below) until the upgrade ends. The cap holds; a unit may
    go unused meanwhile.
  - Shrinking: a smaller target lowers the usable share before the write,
    even below what the worker runs (every claim checks the usable share
    under the worker's lock, so no claim started after it counts against
    the old one): a worker kept busy by a backlog claims no more than its
    target and so hands its excess over as its handlers end, where
    keeping max(target, running) usable let it keep the whole cap for as
    long as the backlog lasted.
  - Growing: a larger hold is used only after its write landed and a
    registry read that followed (1 LIST, 1 GET per live worker) shows the
    holds of the live workers summing to at most N; otherwise the worker
    keeps its usable share and tries again at its next heartbeat (every
    second while it waits). A joining worker holds nothing until others'
    published records show they have shrunk to their targets.
  - A worker whose last landed heartbeat is older than its stop bound
    (three quarters of DeadAfter) when one lands again drops every usable
    share and grows again as above: others may have counted it dead.

Proof sketch. Take any instant and each worker's claim on the cap then:
the larger of its usable share and what it runs (it runs more only after
its share was lowered; a claim needs a usable share above what it runs,
so the claim grows only when the usable share does). Each claim above
what the worker ran when its share was lowered was confirmed by a write W
of its holds followed by a read R; of these, let W_k be the last write.
Every other worker's claim was confirmed by an earlier write, and since
then its holds in the bucket never fell below it (it publishes at least
what it runs, and shrinking lowers the usable share first), so R_k,
which follows W_k, read holds at least as large for every worker it counted
live, and summed them with its own to at most N. A worker R_k left out was
dead by the monitor's rule: its heartbeat older than DeadAfter +
MaxClockSkew by the reader's clock, so (see Leases and liveness) it stopped
its handlers at three quarters of DeadAfter and they have returned (exec
handlers within the kill grace), and, should a heartbeat of it land again,
it starts from nothing. A worker without an entry then either had none
yet (it will confirm after W_k and see W_k's holds) or deregistered after
its handlers returned. Clock skew enters only through the liveness rule,
bounded by MaxClockSkew as there; a lost heartbeat response counts as not
landed, which only delays growth, while a lost shrinking write was already
applied to the usable share. So the sum of the claims, hence of the
running handlers, is at most N.

What it costs and what it does not guarantee:
  - a killed worker's share is unusable until it is found dead: DeadAfter +
    MaxClockSkew (22 s by default) after its last heartbeat, plus up to a
    heartbeat interval (10 s) for the others to notice and confirm;
  - a joining worker gets its share once the others' next heartbeats
    shrank them and their running tasks of the type beyond their new
    targets ended (about a heartbeat interval and a task's run time);
  - a worker learns a cap from control.json (read at least every second
    while it claims): tasks started before it knew are not stopped, and
    count against the cap as they end;
  - requests: a worker serving a capped type pays 1 LIST per heartbeat
    interval, plus 1 LIST and 1 GET per live worker after a heartbeat that
    raised its share. Nothing per task;
  - a paused type keeps its shares (every worker is paused alike); a
    draining worker publishes 0 beyond what it runs.

# Fleet-wide rate limits

A limit of control.json may also carry a rate ({"rate": R, "per": "s" or
"m", "burst": B}, set by qo limit --rate; B absent or 0: a second's worth,
at least 1): over any window of length T, at most R*T/per + B + (workers
serving the type) handlers of the type start across the fleet. It is held
by the shares of the caps, nothing per task:

  - The rate in starts per minute (R*60 for a rate per second) is split
    and handed over exactly as a cap (previous section): the share is
    published in the worker's holds under "rate:TYPE", shrinks before its
    write and grows only once confirmed, so the usable shares of the live
    workers sum to at most the rate at every instant.
  - Each worker runs a token bucket for the type at its usable share
    (share/60 starts per second) holding at most max(1, B*share/rate)
    tokens; a claim of the type takes a token before it is sent (the
    task's claim and start follow; nothing is held on a lease), and one
    that does not start its task (lost to another worker, failed) gives
    its token back for the next claim. With no usable share the worker
    claims none of the type.
  - Precision: the sum of the buckets' rates is at most the rate, so in a
    window of length T at most rate*T starts plus the tokens the buckets
    held at its start, at most B plus one per worker (a bucket holds at
    least one). A bucket's rate changes while its tokens stay, so a share
    handed over (a worker lowering its share keeps what it had saved) adds
    at most its burst, within the bound. Shares round in starts per minute,
    so they sum to the rate exactly. The start rate over a minute is the
    limit, less the time a worker joining or found dead waits for its
    share (as for a cap) and the time a full bucket waits for a claim (a
    worker polls again when an empty bucket's next token is due, and
    takes it once a claim is sent): measured within 1% for 1 and 8
    workers with a backlog over seconds (worker/rate_test.go), 97-100%
    of 20/s (burst 10) in every minute of a backlog with 1 and 8
    workers, at most 209 and 201 starts in any 10 s (worker/sim,
    TestRatePrecision), 9.6/s for 10/s over 4 worker processes on
    MinIO over 20 s, start-up included (e2e/rate_test.go). Starts are
    when the claim took its token; a handler starts after the claim's
    requests, so its own start times jitter by one claim's latency.
  - Requests: those of a cap, for the share; a token costs none.

# Task keys

A task may carry a key (SubmitRequest.Key, qo submit --key, "key" in a
submit document: bulk lines, the HTTP API, workflow steps), e.g. the
customer it is for. Keys follow the rules of type names ([A-Za-z0-9_.:-],
1 to 64 characters, not dots only); a bad one is ErrInvalidInput naming the
rule, and a task object holding one is malformed. The key never changes.

The ready entry of a keyed task lies in its key's section of the
partition, "ready/{type}/{shard}/-{key}/{rank-ms}~{priority}~{id}"; an
entry without a key lies in the partition itself. Keys came within layout
3, as a fifth field after the id of its ready entry,
"{rank-ms}~{type}~{priority}~{id}~{key}", and layout 4 kept them as a
last field, "{rank-ms}~{priority}~{id}~{key}"; qo migrate (or the
sweeper, for a stray one) moves such an entry to its key's section. A qo
that does not know keys is of layout 3 or older and refuses this bucket;
one started before the switch that still runs (see Key layout) drops the
key of a keyed task it rewrites (its monitor taking back an expired
lease, an operator's retry), so the task goes on as one without a key.

Fairness. Within a type and a priority, a worker takes the ready tasks its
held view holds (see worker/poll.go, "Polling") round-robin over their
keys: the first task of every key before the second of any, the key whose
turn came longest ago first, then oldest first; tasks without a key take
their turns as one key. Each key's entries are claimed up to the earliest
cut of that key's sections (a page of a section listed short of its end),
and the entries without a key up to the earliest cut of theirs; one
key's cut holds back no other key. A key none of whose held entries is
within its cut (or the entries without a key, in a type that has keys)
takes its turns with its first held entry beyond it; that claim may pass
an older entry of its own key in a shard not yet listed so far. So
another key's first task, once in the view, is among the worker's next K
claims of its priority for the K keys of the type in the view, however
deep one key's backlog; across W workers, each taking turns over its
share, among about the next K x W starts.

It is in the view after the first walk that lists its partition, however
deep the other keys' backlogs: a LIST that stops inside a key's section
goes on past that section in the same walk (queue.ReadyKeySectionEnd),
so a deep key costs one LIST per listing of its partition, not one per
page of its backlog. A walk sends at most 4 LISTs, and up to 16 more
that go on past a section whose entries filled half a LIST or more (a
deep key; so a walk holds at most 20 pages); the sections of a partition
sort by key, so a key whose partition holds more than 16 keys deeper than
a page ahead of it in key order waits for the next listing of that
partition (when its page is used up, or PageHold, 10 s, after it was
listed), itself the same bound again.
Entries of a key ranked after another key's backlog are no longer behind
that backlog in the index: the bound does not grow with any key's depth.
Measured: worker/keys_test.go, one key's 300 tasks ahead of another's 5
on one slot: the 5 start among the first 10; with pages of 10 keys over
16 shards, 1,600 tasks of one key (10 pages in every partition) ahead of
5 of another: the 5 start among the first 10, after 17 LISTs of the ready
index, as with 100 ahead (8-23 LISTs; paging through the backlog, the old
walk started the last of the 5 as start 1,515); e2e/keys_test.go, 2
worker processes of 4 slots on MinIO, 10,000 tasks of one key ahead of 10
of another: see docs/performance.md ("Keys"); without keys they would
start after the 10,000.

Per-key caps. control.json's "key_limits" holds a per-key cap by type
({"concurrency": N, "set_at": ...}, set by qo limit TYPE --concurrency N
--per-key; apart from "limits" so a qo without keys reads control.json as
before): for every key, at no instant do more than N handlers of tasks of
the type with that key run across every worker. Tasks without a key are
not limited by it. It is held by the shares of the caps (Fleet-wide
concurrency caps), nothing per task:

  - Each worker serving the type holds a share of N under "key:TYPE" in
    its registry entry, worked out, published, shrunk and grown exactly as
    a cap's share, so the usable shares of the live workers sum to at most
    N at every instant (the proof of that section, word for word).
  - A worker runs at most its usable share of tasks of each key (claims in
    flight counted; checked under its lock before every claim, from the
    key in the ready entry's name), so for any key the running handlers
    are at most the sum of the usable shares: N. What it publishes is at
    least the most tasks of one key it runs, as a cap's hold is at least
    what it runs. A task claimed from an entry without its key (one a
    process that does not know keys wrote for a keyed task) is checked after the claim, by the key of the task
    object, and given back (Release: pending, no retry counted, its entry
    now with the key) when that key is at the worker's share.
  - Cost and bounds: those of a cap. A killed worker's share (hence its
    part of every key's N) is unusable until it is found dead, DeadAfter +
    MaxClockSkew (22 s by default) after its last heartbeat, plus up to a
    heartbeat interval. Requests per task: unchanged (the key is in the
    entry's name): a worker draining 200 tasks of 10 keys under a per-key
    cap makes the same 1,203 task requests as for 200 without keys, and 8
    of the registry and control.json in all (worker/keys_test.go).
  - What it does not do: a worker whose share is 0 (N below the number of
    workers serving the type) runs no keyed task of the type, so give N at
    least the number of workers for all to take part.

Per-key rates. A key limit may also carry a rate ({"rate": R, "per": "s"
or "m", "burst": B}, set by qo limit TYPE --rate 20/s --per-key): for
every key, over any window of length T at most R*T/per + B + (workers
serving the type) handlers of the type with that key start. As for a
fleet-wide rate (Fleet-wide rate limits), the rate in starts per minute is
shared under "keyrate:TYPE", and each worker runs a token bucket at its
usable share for each key it claims (created full when the key is first
claimed; at most 4,096 kept, full ones dropped past that, which changes
nothing as a new one starts full); a claim of a keyed task takes a token
of its key's bucket before it is sent. The workers' buckets of one key sum
to at most the rate, so the bound of that section holds per key. A claim
that does not start its task does not give its token back (fewer starts,
never more). Measured: worker/keys_test.go, 10/s burst 1 per key over 2
workers, two keys of 25 tasks side by side: at most 10 of one key in any
second. Requests: those of a cap; a token costs none.

# Schedules

schedules/{name}.json holds a cron schedule: a 5-field expression (minute
hour day-of-month month day-of-week, or @hourly, @daily...) read in an
IANA time zone, the task to submit, enabled, the missed-run policy and
last_due, the latest due time handled. The leading monitor runs them (any
number of schedulers is safe): for a schedule whose due times in
(last_due, now] are not empty it re-reads the schedule, submits ONE task
for the latest due time with the idempotency key "schedule:{name}:{due in
RFC 3339}" (so two schedulers create one task) and compare-and-swaps
last_due forward; earlier due times of the same pass count as skipped.
Times come from the queue clock. A due time handled more than schedule.Grace
(2 minutes) late is missed: policy catch-up (default) still submits it,
skip does not. So downtime never floods the queue. Enabling a schedule
sets last_due to now (due times passed while disabled do not run); delete
writes a tombstone ("deleted": true) in place, since deleted keys are
never written conditionally again; create over a tombstone replaces it.
An operator's write names them in "actor" (see Actor). The package
queue/schedule owns these objects (Create, Get, List, SetEnabled, Delete,
Trigger and the Scheduler); the queue keeps their key (ScheduleKey,
ValidateScheduleName) and the submit each run makes.

# Server probes

qo's compare-and-swap is only as good as the server's conditional writes,
and some S3 servers ignore them without an error (s3rver, rclone serve s3
and fauxqs do: tasks then run twice). So Init, before it writes
queue.json, and every worker, before it registers, run the probe of
store/doctor (doctor.Probe) on monitor/probe.json: a create-only PUT (the
key exists afterwards), a second create-only PUT that must be refused,
and a PUT with a bogus ETag in If-Match that must be refused: 3 PUTs,
once per start. A server that accepts either refused write is refused
(doctor.ErrUnsafe, with the finding and the fix qo doctor gives). The key
is fixed and never deleted, so on a conforming server only the first
probe of a bucket writes a version (there is no history to pile up), and
workers starting at once cannot disturb each other: every one of their
writes is refused. It lies under monitor/, which every worker may write
and whose old versions the lifecycle rules expire.

Init also reads back the versioning and lifecycle rules it set (for up to
InitOptions.SettleTime, 10s, as AWS S3 applies bucket settings with a
short delay): a server that answered success but did not apply them
(fauxqs) fails Init with store.ErrNotSupported. A server that refuses
either setting is reported as before (versitygw has no lifecycle rules).

# Idempotency keys

Submit with an idempotency key first binds the key to the new task's id
with a create-only PUT of a marker, idempotency/{h[:2]}/{h}.json (h the
hex SHA-256 of task_type NUL key; the first two characters spread the
markers over 256 prefixes), holding {"format":1,"task_id",...}. If the
marker exists, its task is the answer: created=false and the existing
task, or ErrIdempotencyMismatch when the input differs; a pending duplicate
gets its ready entry written again, so retrying a submit always leaves the
task claimable. If the marker exists but its task does not (the first
submit died between the two writes), the retry creates the task under the
marker's id. So a keyed task has a time-ordered id like any other and
shows in creation windows. A keyed submit costs 1 PUT more (3 PUT); a
duplicate 2 GET (+1 PUT when pending). LookupKey finds a key's task. The
key lives as long as its marker. Markers are never deleted, and the task
a marker names never changes.

Under a retention (see Retention) a marker lives as long as its task, so
a late resubmit never makes a duplicate of a task that still exists. It
is written tagged qo-retention=live, as its task is (in the same PUT),
and the lifecycle rule expires only markers tagged finished. The write
that finishes a keyed task (completed, cancelled, expired or archived) is
followed, once it landed, by a rewrite of its marker tagged finished: 1
PUT, the same binding. Lifecycle rules count a version's age from its
write, so the marker expires N days after the task finished, with the
task, whatever the task's age: a task delayed, waiting, or failed (a
dead letter) for longer than N days keeps its key. A replay of a finished
keyed task rewrites the marker tagged live before the task write (as an
index entry is written first), so it does not expire under a task that
lives again (when that rewrite fails, the replay fails and the task is
not changed). A rewrite after the end that fails leaves the marker tagged
live: kept longer, never expired early. Workflow markers are never tagged
finished: they stay, like the workflow records. Markers an earlier qo
wrote carry no tag: the rule never expires them, and one is rewritten
tagged finished when its task finishes; a bucket whose rules an earlier
qo installed still expires every marker N days after its submit until
qo init runs again.

# Uniqueness windows

A key binds for good unless its submit gives a window (SubmitRequest's
UniqueWhileActive or UniqueFor, qo submit --unique-while-active or
--unique-for D, the HTTP API's unique_while_active and unique_for, the
same fields on a bulk line): while its task is active (waiting, pending
or running), or until created_at + D. The window is recorded in the
marker (while_active, until) and in the task (unique, never changed). A
submit whose create-only PUT of the marker finds one reads it (1 GET; +1
GET of its task for a while-active binding): a binding that holds is the
answer, as for any key; one that ended (its until passed, or its task
ended: completed, failed, cancelled, expired or archived) is taken over
with a PUT of a marker naming the new task, If-Match the ETag read, and
the new task is created as usual under it. The new binding takes the
window of the submit that made it. Exactly one task per binding, under
races and lost responses:

  - two submitters taking over the same ended binding: both PUT If-Match
    the same ETag, one wins; the other's PUT fails, it reads the marker
    again and finds the winner's binding, which holds (its task is
    active, or does not exist yet: then, as for a first submit that died
    between marker and task, it creates the task under the marker's id
    with a create-only PUT, and the winner's own create finds it and
    answers created=false; exactly one of them gets created=true);
  - a takeover PUT whose response was lost: the submit reads the marker;
    when it names the submit's own new id (ids are fresh per call) the
    takeover landed and the task is created; otherwise another binding
    won, as above;
  - a binding taken over again and again while a submit tries: it gives
    up after 5 rounds with ErrConflict, and nothing of its own is bound;
  - an ended task whose key moved on keeps its idempotency_key; a replay
    of it does not take the key back (under a retention the marker
    rewrite of a windowed task is If-Match on a read of the marker, and
    skipped when the marker names another task: 1 GET more, for windowed
    keys only);
  - a while-active binding whose task does not exist (its submit died
    between the two writes, or it was deleted) holds: the next submit
    with the key creates the task under it.

A window does not change what a duplicate answers within it: the bound
task, or ErrIdempotencyMismatch for another input. While a binding holds
a submit costs what a keyed duplicate does (+1 GET for while active); a
takeover costs 1 GET, +1 GET (while active), +1 PUT more than a new key.
Markers and tasks written before windows existed have neither field:
bound for good, as before.
*/
package queue

import "time"

// MaxClockSkew bounds how far two processes' views of the queue clock may
// differ (see "Clock and skew bound" above).
const MaxClockSkew = 2 * time.Second
