package queue

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/qo-queue/qo/store"
)

// DefaultOffloadThreshold is the size above which an input or output is
// stored in its own object under data/ instead of inside the task.
const DefaultOffloadThreshold = 256 << 10

// DataRef points at an offloaded input or output (see doc.go, "Large
// payloads"). VersionID pins the exact version written (empty on an
// unversioned bucket, where SHA256 still catches a changed object).
type DataRef struct {
	Key       string `json:"key"`
	VersionID string `json:"version_id"`
	Bytes     int64  `json:"bytes"`
	SHA256    string `json:"sha256"`
}

func digest(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// offload reports whether a payload of n bytes goes to data/.
func (q *Queue) offload(n int) bool { return n > q.threshold }

// writeData stores body at key (with tags, when any) and returns its
// reference.
func (q *Queue) writeData(ctx context.Context, key string, body []byte, cond store.Condition, tags []store.Tag) (*DataRef, error) {
	res, err := q.put(ctx, key, body, cond, tags)
	if err != nil {
		return nil, err
	}
	return &DataRef{Key: key, VersionID: res.VersionID, Bytes: int64(len(body)), SHA256: digest(body)}, nil
}

// readData loads the payload a reference points at and checks its digest.
func (q *Queue) readData(ctx context.Context, ref *DataRef) (json.RawMessage, error) {
	// The reference says how large the payload is; none is over the
	// queue's limit.
	max := q.cfg.EffectiveMaxPayloadBytes()
	if ref.Bytes > 0 && ref.Bytes < max {
		max = ref.Bytes
	}
	var obj *store.Object
	var err error
	if ref.VersionID != "" {
		obj, err = q.getVersionLimited(ctx, ref.Key, ref.VersionID, max)
	} else {
		obj, err = q.getLimited(ctx, ref.Key, max)
	}
	if errors.Is(err, store.ErrNotFound) {
		return nil, fmt.Errorf("read %s: %w (the offloaded payload is gone)", ref.Key, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", ref.Key, err)
	}
	if got := digest(obj.Body); got != ref.SHA256 {
		return nil, &MalformedError{Key: ref.Key, Err: fmt.Errorf("sha256 %s, the task expects %s (the object was overwritten)", got, ref.SHA256)}
	}
	if !json.Valid(obj.Body) {
		return nil, &MalformedError{Key: ref.Key, Err: errors.New("not valid JSON")}
	}
	return obj.Body, nil
}

// Payload names one of a task's two payloads.
type Payload int

// The payloads of a task.
const (
	InputPayload  Payload = iota // the input it was submitted with
	OutputPayload                // the output it completed with
)

// LoadPayload returns the task's input or output (which), reading it from
// data/ when it was offloaded. Handlers, the CLI and the UIs see the same
// JSON either way.
func (q *Queue) LoadPayload(ctx context.Context, t *Task, which Payload) (json.RawMessage, error) {
	what, inline, ref := "input", t.Input, t.InputRef
	if which == OutputPayload {
		what, inline, ref = "output", t.Output, t.OutputRef
	}
	if ref == nil {
		return inline, nil
	}
	b, err := q.readData(ctx, ref)
	if err != nil {
		return nil, fmt.Errorf("load %s of task %s: %w", what, t.ID, err)
	}
	return b, nil
}

// WithPayloads returns a copy of t with Input and Output filled in from
// data/ where they were offloaded (the references stay, so a reader can
// still tell). A task without references is returned as is.
func (q *Queue) WithPayloads(ctx context.Context, t *Task) (*Task, error) {
	if t == nil || (t.InputRef == nil && t.OutputRef == nil) {
		return t, nil
	}
	c := t.Clone()
	var err error
	if c.Input, err = q.LoadPayload(ctx, t, InputPayload); err != nil {
		return nil, err
	}
	if c.Output, err = q.LoadPayload(ctx, t, OutputPayload); err != nil {
		return nil, err
	}
	return c, nil
}

// putInput stores an input too large to live in the task (create-only, so
// the input of an existing task is never replaced) and returns its
// reference. When the object exists already, an identical payload (a
// repeated submit) is reused; a different one is left alone when a task
// owns it (the caller's create-only task PUT then reports the duplicate)
// and replaced when no task does (a submit that crashed half-way).
func (q *Queue) putInput(ctx context.Context, t *Task, body []byte) (*DataRef, error) {
	key := DataKey(t.Shard, t.ID, "input")
	ref, err := q.writeData(ctx, key, body, store.CreateOnly, nil)
	if err == nil || !errors.Is(err, store.ErrPreconditionFailed) {
		return ref, err
	}
	obj, gerr := q.getLimited(ctx, key, int64(len(body)))
	if gerr == nil && bytes.Equal(obj.Body, body) {
		return &DataRef{Key: key, VersionID: obj.VersionID, Bytes: int64(len(body)), SHA256: digest(body)}, nil
	}
	_, _, terr := q.getTask(ctx, t.ID)
	switch {
	case terr == nil:
		// A task owns the object: hand back a reference to the new bytes
		// without writing them; the task create will be refused.
		return &DataRef{Key: key, Bytes: int64(len(body)), SHA256: digest(body)}, nil
	case !errors.Is(terr, ErrNotFound):
		return nil, terr
	}
	return q.writeData(ctx, key, body, store.Condition{}, nil)
}
