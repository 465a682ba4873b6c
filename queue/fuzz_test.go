package queue_test

import (
	"encoding/json"
	"strings"
	"testing"

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
	f.Add("leases/1904108889123/0/0b6f4c2e-8d1a-4f7e-9c3b-2a5d6e7f8a9b")
	f.Add("ready/garbage")
	f.Add("ready//0//")
	f.Fuzz(func(t *testing.T, key string) {
		if e, err := queue.ParseReadyKey(key); err == nil {
			if !strings.HasPrefix(key, queue.ReadyPrefix) || e.ID.String() == "" {
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
		if queue.ValidateType(d.Request.Type) != nil {
			t.Fatalf("accepted an invalid type %q", d.Request.Type)
		}
		if d.Request.Input != nil && !json.Valid(d.Request.Input) {
			t.Fatalf("accepted invalid input JSON %q", d.Request.Input)
		}
		if d.Delay < 0 || (d.Request.MaxRetries != nil && *d.Request.MaxRetries < 0) {
			t.Fatalf("accepted a negative value: %+v", d)
		}
	})
}
