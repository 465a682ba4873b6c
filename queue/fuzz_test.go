package queue_test

import (
	"encoding/json"
	"path"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/qo-queue/qo/queue"
)

// Fuzz targets for everything qo parses from the bucket or from users:
// none may panic, and what they accept must round-trip.
// Run one with: go test ./queue -run XXX -fuzz FuzzDecodeTask -fuzztime 1m

func FuzzDecodeTask(f *testing.F) {
	f.Add(`{"format":1,"id":"0b6f4c2e-8d1a-4f7e-9c3b-2a5d6e7f8a9b","task_type":"e","shard":"0","status":"pending","rev":1}`)
	f.Add(`{"format":1,"id":`)
	f.Add(`{"format":2}`)
	f.Add(`[]`)
	f.Add("\xff\xfe")
	f.Add(`{"format":1,"id":"0b6f4c2e-8d1a-4f7e-9c3b-2a5d6e7f8a9b","status":"running","attempt":"x"}`)
	f.Fuzz(func(t *testing.T, body string) {
		task, err := queue.DecodeTask("", []byte(body))
		if err != nil {
			return
		}
		out, err := queue.EncodeTask(task)
		if err != nil {
			t.Fatalf("a decoded task does not encode: %v", err)
		}
		again, err := queue.DecodeTask("", out)
		if err != nil {
			t.Fatalf("an encoded task does not decode: %v\n%s", err, out)
		}
		if again.ID != task.ID || again.Status != task.Status || again.Rev != task.Rev {
			t.Fatalf("round trip changed the task: %+v vs %+v", task, again)
		}
	})
}

func FuzzDecodeWorker(f *testing.F) {
	f.Add(`{"format":1,"worker_id":"w1","last_heartbeat":"2030-01-01T00:00:00Z"}`)
	f.Add(`{"format":1,"worker_id":`)
	f.Fuzz(func(t *testing.T, body string) {
		_, _ = queue.DecodeWorker("", []byte(body))
	})
}

func FuzzParseKeys(f *testing.F) {
	f.Add("ready/1904108889123/0/email/0b6f4c2e-8d1a-4f7e-9c3b-2a5d6e7f8a9b")
	f.Add("ready/email/b/1904108889123~normal~0b6f4c2e-8d1a-4f7e-9c3b-2a5d6e7f8a9b")
	f.Add("ready/b/1904108889123~email~normal~0b6f4c2e-8d1a-4f7e-9c3b-2a5d6e7f8a9b")
	f.Add("leases/1904108889123/0/0b6f4c2e-8d1a-4f7e-9c3b-2a5d6e7f8a9b")
	f.Add("ready/garbage")
	f.Add("ready//0//")
	f.Fuzz(func(t *testing.T, key string) {
		if e, err := queue.ParseReadyKey(key); err == nil {
			if !strings.HasPrefix(key, queue.ReadyPrefix) || e.ID.String() == "" || queue.ReadyKeyPartition(key) != e.Partition() ||
				!strings.HasPrefix(key, queue.ReadyPartitionPrefix(e.Partition())) {
				t.Fatalf("accepted %q as %+v", key, e)
			}
		}
		if e, err := queue.ParseLeaseKey(key); err == nil && !strings.HasPrefix(key, queue.LeasesPrefix) {
			t.Fatalf("accepted %q as a lease key: %+v", key, e)
		}
		_, _ = queue.ParseID(key)
	})
}

func FuzzDecodeSubmit(f *testing.F) {
	f.Add(`{"type":"email","input":{"to":"a"},"max_retries":1,"delay":"90s"}`)
	f.Add(`{"type":"e","retry_policy":{"multiplier":0}}`)
	f.Add(`{"type":"e","available_at":"2030-01-01T00:00:00Z","idempotency_key":"k"}`)
	f.Add(`{"type":`)
	f.Fuzz(func(t *testing.T, doc string) {
		d, err := queue.DecodeSubmit([]byte(doc), queue.DefaultSubmitDefaults)
		if err != nil {
			return
		}
		if queue.ValidateType(d.Type) != nil {
			t.Fatalf("accepted an invalid type %q", d.Type)
		}
		if d.Input != nil && !json.Valid(d.Input) {
			t.Fatalf("accepted invalid input JSON %q", d.Input)
		}
		if err := d.Validate(); err != nil {
			t.Fatalf("decoded a request Validate refuses: %v", err)
		}
		if d.Delay < 0 || (d.MaxRetries != nil && *d.MaxRetries < 0) {
			t.Fatalf("accepted a negative value: %+v", d)
		}
	})
}

// FuzzNameKeys feeds one string to every name validator (task type, worker
// id, schedule name). Whatever a validator accepts must build keys that
// survive an S3 round trip unchanged: no "." or ".." segment (S3 servers
// and HTTP clients clean those away, so the object lands under another
// key), no empty segment, nothing outside printable ASCII; and parsing
// each key gives back exactly the name, in exactly its own segment.
func FuzzNameKeys(f *testing.F) {
	for _, s := range []string{"send_email", "img.resize:v2-fast", "w-1.host:4242", ".", "..", "...", ".hidden", "a..b", "a/b",
		"a/../b", "./a", "", " ", "a b", "é", "\x00", "\x1b]0;x\x07", strings.Repeat("x", 64), strings.Repeat("y", 129)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		if queue.ValidateType(name) == nil {
			checkTypeKeys(t, name)
		}
		if queue.ValidateWorkerID(name) == nil {
			checkWorkerKeys(t, name)
		}
		if queue.ValidateScheduleName(name) == nil {
			key := queue.ScheduleKey(name)
			checkKeyShape(t, key)
			got, err := queue.ParseScheduleKey(key)
			if err != nil || got != name {
				t.Fatalf("schedule key %q of %q parses back as %q, %v", key, name, got, err)
			}
		}
	})
}

// fuzzTask is a task of the given type and worker, in every index at once
// (the status does not matter to key building).
func fuzzTask(typ, worker string) *queue.Task {
	at := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	id := queue.NewIDAt(at)
	return &queue.Task{ID: id, Type: typ, Shard: queue.ShardOf(id, 1), Status: queue.StatusFailed, Priority: queue.PriorityNormal,
		AvailableAt: at, LeaseExpiresAt: &at, CompletedAt: &at, LeaseID: uuid.NewString(), WorkerID: worker}
}

func checkTypeKeys(t *testing.T, typ string) {
	t.Helper()
	task := fuzzTask(typ, "w")
	ready := queue.ReadyKey(task)
	checkKeyShape(t, ready)
	checkSegment(t, ready, 1, typ)
	r, err := queue.ParseReadyKey(ready)
	if err != nil || r.Type != typ || r.ID != task.ID || queue.ReadyKeyPartition(ready) != r.Partition() {
		t.Fatalf("ready key %q of type %q parses back as %+v, %v", ready, typ, r, err)
	}
	lease := queue.LeaseKey(task)
	checkKeyShape(t, lease)
	checkField(t, lease, 1, typ)
	l, err := queue.ParseLeaseKey(lease)
	if err != nil || l.Type != typ || l.ID != task.ID {
		t.Fatalf("lease key %q of type %q parses back as %+v, %v", lease, typ, l, err)
	}
	dead := queue.DeadKey(task)
	checkKeyShape(t, dead)
	checkSegment(t, dead, 3, typ)
	d, err := queue.ParseDeadKey(dead)
	if err != nil || d.Type != typ || d.ID != task.ID {
		t.Fatalf("dead-letter key %q of type %q parses back as %+v, %v", dead, typ, d, err)
	}
	checkKeyShape(t, task.Key())
	got, err := queue.ParseID(strings.TrimSuffix(path.Base(task.Key()), ".json"))
	if err != nil || got != task.ID {
		t.Fatalf("task key %q parses back as %v, %v", task.Key(), got, err)
	}
}

func checkWorkerKeys(t *testing.T, worker string) {
	t.Helper()
	task := fuzzTask("t", worker)
	lease := queue.LeaseKey(task)
	checkKeyShape(t, lease)
	checkField(t, lease, 4, worker)
	l, err := queue.ParseLeaseKey(lease)
	if err != nil || l.WorkerID != worker {
		t.Fatalf("lease key %q of worker %q parses back as %+v, %v", lease, worker, l, err)
	}
	reg := queue.WorkerKey(worker)
	checkKeyShape(t, reg)
	got, err := queue.ParseWorkerKey(reg)
	if err != nil || got != worker {
		t.Fatalf("registry key %q of worker %q parses back as %q, %v", reg, worker, got, err)
	}
}

// checkKeyShape fails for a key an S3 server or client could rewrite: a
// "." or ".." segment, an empty segment, or bytes outside printable ASCII.
func checkKeyShape(t *testing.T, key string) {
	t.Helper()
	if path.Clean(key) != key || strings.HasPrefix(key, "/") {
		t.Fatalf("key %q is not clean (path.Clean gives %q): a dot or empty segment", key, path.Clean(key))
	}
	for _, seg := range strings.Split(key, "/") {
		if strings.Trim(seg, ".") == "" {
			t.Fatalf("key %q has the segment %q", key, seg)
		}
	}
	if !utf8.ValidString(key) {
		t.Fatalf("key %q is not UTF-8", key)
	}
	for _, r := range key {
		if r < 0x21 || r > 0x7e {
			t.Fatalf("key %q holds %q", key, r)
		}
	}
}

// checkSegment fails unless segment i of key (0 is the prefix) is name.
func checkSegment(t *testing.T, key string, i int, name string) {
	t.Helper()
	segs := strings.Split(key, "/")
	if i >= len(segs) || segs[i] != name {
		t.Fatalf("key %q: segment %d is not exactly %q", key, i, name)
	}
}

// checkField fails unless field i of the key's last segment (an index
// entry's name, its fields joined by queue.FieldSep) is exactly name.
func checkField(t *testing.T, key string, i int, name string) {
	t.Helper()
	fields := strings.Split(path.Base(key), queue.FieldSep)
	if i >= len(fields) || fields[i] != name {
		t.Fatalf("key %q: field %d of its name is not exactly %q", key, i, name)
	}
}
