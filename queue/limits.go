package queue

import (
	"context"
	"errors"
	"fmt"

	"github.com/qo-queue/qo/store"
)

// DefaultMaxPayloadBytes bounds a task's input and its output (each) when
// queue.json sets no max_payload_bytes (see doc.go, "Size limits").
const DefaultMaxPayloadBytes = 64 << 20

// MaxInlinePayload is the largest input or output a task object holds
// inline: larger ones are offloaded to data/ (see Options.OffloadThreshold),
// so a task object stays small whatever its payloads (see doc.go, "Size
// limits").
const MaxInlinePayload = 1 << 20

// Bounds of the objects qo reads, besides payloads (see doc.go, "Size
// limits"). A reader refuses an object over its bound before loading it.
const (
	// maxSmallObject bounds objects that hold no payload: queue.json,
	// worker records, named leases, the control and sweep-state objects,
	// idempotency markers, workflow names and index entries.
	maxSmallObject = 1 << 20
	// taskEnvelope bounds what a task object holds besides its inline
	// input and output (parents, children, values from parents, errors).
	taskEnvelope = 4 << 20
	// maxTaskObject bounds a task object and each of its versions.
	maxTaskObject = 2*MaxInlinePayload + taskEnvelope
	// maxWorkflowRecord bounds a workflow record (MaxWorkflowSteps steps
	// and MaxWorkflowEdges edges take well under 1 MiB; records written
	// under the earlier bound of 20,000 steps fit too).
	maxWorkflowRecord = 16 << 20
)

// EffectiveMaxPayloadBytes is the bound of the queue on a task's input
// and on its output, each: MaxPayloadBytes (queue.json's
// max_payload_bytes), or DefaultMaxPayloadBytes when unset
// (Queue.Config().EffectiveMaxPayloadBytes()).
func (c Config) EffectiveMaxPayloadBytes() int64 {
	if c.MaxPayloadBytes > 0 {
		return c.MaxPayloadBytes
	}
	return DefaultMaxPayloadBytes
}

// payloadTooLarge is the error of an input or output over the bound.
func (q *Queue) payloadTooLarge(what string, n int) error {
	return invalidInput("the %s is %d bytes, over this queue's limit of %d bytes (%s): make it smaller or store it elsewhere and pass a reference, or raise the limit for the whole bucket with qo init --max-payload-bytes N",
		what, n, q.cfg.EffectiveMaxPayloadBytes(), humanBytes(q.cfg.EffectiveMaxPayloadBytes()))
}

// humanBytes formats n as the largest binary unit that divides it.
func humanBytes(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", n>>30)
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

// getLimited reads key, refusing an object of more than max bytes before
// loading it: a *MalformedError wrapping the *store.TooLargeError, so
// listings report and skip it like any object they cannot decode, and a
// single read says which key and which bound.
func (q *Queue) getLimited(ctx context.Context, key string, max int64) (*store.Object, error) {
	return getLimited(ctx, q.s, key, max)
}

// GetLimited reads key from s, refusing an object over max bytes: such an
// object is a *MalformedError naming the key and the bound (packages that
// own an object kind of the bucket, such as queue/schedule, read theirs
// with it as the queue reads its own).
func GetLimited(ctx context.Context, s store.Store, key string, max int64) (*store.Object, error) {
	return getLimited(ctx, s, key, max)
}

func getLimited(ctx context.Context, s store.Store, key string, max int64) (*store.Object, error) {
	obj, err := store.GetLimited(ctx, s, key, max)
	return obj, tooLargeIsMalformed(key, err)
}

// getVersionLimited is getLimited for one version of key.
func (q *Queue) getVersionLimited(ctx context.Context, key, versionID string, max int64) (*store.Object, error) {
	obj, err := store.GetVersionLimited(ctx, q.s, key, versionID, max)
	return obj, tooLargeIsMalformed(key, err)
}

func tooLargeIsMalformed(key string, err error) error {
	if tl := (*store.TooLargeError)(nil); errors.As(err, &tl) {
		return &MalformedError{Key: key, Err: tooLarge{tl}}
	}
	return err
}

// tooLarge words a *store.TooLargeError for a MalformedError, which names
// the key already.
type tooLarge struct{ *store.TooLargeError }

func (e tooLarge) Error() string {
	if e.Size > 0 {
		return fmt.Sprintf("too large: %d bytes, over the limit of %d bytes for this kind of object", e.Size, e.Max)
	}
	return fmt.Sprintf("too large: over the limit of %d bytes for this kind of object", e.Max)
}

func (e tooLarge) Unwrap() error { return e.TooLargeError }
