package queue

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
)

// Key layout (see doc.go for what each object means).
const (
	ConfigKey        = "queue.json"
	TasksPrefix      = "tasks/"
	ReadyPrefix      = "ready/"
	LeasesPrefix     = "leases/"
	WorkersPrefix    = "workers/"
	ShardLeasePrefix = "shard-leases/"
	MonitorPrefix    = "monitor/"
	MonitorLeaderKey = "monitor/leader.json"
)

// msDigits is the fixed width of the millisecond timestamps in index keys:
// 13 digits cover 1970..2286, so lexicographic order is time order.
const msDigits = 13

const maxMS = 9999999999999

// ShardLeaseKey is the named-lease key that grants ownership of a shard.
func ShardLeaseKey(shard string) string { return ShardLeasePrefix + shard + ".json" }

// WorkerKey is the registry key of a worker.
func WorkerKey(id string) string { return WorkersPrefix + id + ".json" }

// shardOf returns the first n hex characters of the id (lowercase).
func shardOf(id uuid.UUID, n int) string { return id.String()[:n] }

func taskKeyFor(shard string, id uuid.UUID) string {
	return TasksPrefix + shard + "/" + id.String() + ".json"
}

// parseTaskKey splits "tasks/{shard}/{id}.json".
func parseTaskKey(key string) (shard string, id uuid.UUID, ok bool) {
	rest, found := strings.CutPrefix(key, TasksPrefix)
	if !found {
		return "", uuid.Nil, false
	}
	shard, file, found := strings.Cut(rest, "/")
	if !found || !isHex(shard) {
		return "", uuid.Nil, false
	}
	name, found := strings.CutSuffix(file, ".json")
	if !found || len(name) != 36 {
		return "", uuid.Nil, false
	}
	id, err := uuid.Parse(name)
	if err != nil || !strings.HasPrefix(id.String(), shard) {
		return "", uuid.Nil, false
	}
	return shard, id, true
}

func isHex(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// unixMS renders t as the fixed-width millisecond stamp of index keys,
// clamped to the representable range.
func unixMS(t time.Time) string {
	ms := t.UnixMilli()
	if ms < 0 {
		ms = 0
	}
	if ms > maxMS {
		ms = maxMS
	}
	s := strconv.FormatInt(ms, 10)
	if len(s) < msDigits {
		s = strings.Repeat("0", msDigits-len(s)) + s
	}
	return s
}

func parseMS(s string) (time.Time, bool) {
	if len(s) != msDigits {
		return time.Time{}, false
	}
	ms, err := strconv.ParseInt(s, 10, 64)
	if err != nil || ms < 0 {
		return time.Time{}, false
	}
	return time.UnixMilli(ms).UTC(), true
}

// ReadyKey is the ready-index key of a pending task:
// "ready/{available_at ms}/{shard}/{type}/{id}".
func ReadyKey(t *Task) string {
	return readyKey(t.AvailableAt, t.Shard, t.Type, t.ID)
}

func readyKey(at time.Time, shard, typ string, id uuid.UUID) string {
	var b strings.Builder
	b.Grow(len(ReadyPrefix) + msDigits + len(shard) + len(typ) + 36 + 3)
	b.WriteString(ReadyPrefix)
	b.WriteString(unixMS(at))
	b.WriteByte('/')
	b.WriteString(shard)
	b.WriteByte('/')
	b.WriteString(typ)
	b.WriteByte('/')
	b.WriteString(id.String())
	return b.String()
}

// ParseReadyKey decodes a ready-index key.
func ParseReadyKey(key string) (ReadyEntry, error) {
	rest, ok := strings.CutPrefix(key, ReadyPrefix)
	parts := strings.Split(rest, "/")
	if !ok || len(parts) != 4 {
		return ReadyEntry{}, fmt.Errorf("%q is not a ready index key (want ready/{ms}/{shard}/{type}/{id})", key)
	}
	at, ok := parseMS(parts[0])
	if !ok {
		return ReadyEntry{}, fmt.Errorf("ready index key %q: bad timestamp %q", key, parts[0])
	}
	if !isHex(parts[1]) {
		return ReadyEntry{}, fmt.Errorf("ready index key %q: bad shard %q", key, parts[1])
	}
	if ValidateType(parts[2]) != nil {
		return ReadyEntry{}, fmt.Errorf("ready index key %q: bad task type %q", key, parts[2])
	}
	id, err := uuid.Parse(parts[3])
	if err != nil || len(parts[3]) != 36 || !strings.HasPrefix(id.String(), parts[1]) {
		return ReadyEntry{}, fmt.Errorf("ready index key %q: bad task id %q", key, parts[3])
	}
	return ReadyEntry{Key: key, ID: id, Shard: parts[1], Type: parts[2], AvailableAt: at}, nil
}

// LeaseKey is the lease-index key of a running task:
// "leases/{lease_expires_at ms}/{shard}/{id}". Empty when the task has no lease.
func LeaseKey(t *Task) string {
	if t.LeaseExpiresAt == nil {
		return ""
	}
	return leaseKey(*t.LeaseExpiresAt, t.Shard, t.ID)
}

func leaseKey(at time.Time, shard string, id uuid.UUID) string {
	return LeasesPrefix + unixMS(at) + "/" + shard + "/" + id.String()
}

// ParseLeaseKey decodes a lease-index key.
func ParseLeaseKey(key string) (LeaseEntry, error) {
	rest, ok := strings.CutPrefix(key, LeasesPrefix)
	parts := strings.Split(rest, "/")
	if !ok || len(parts) != 3 {
		return LeaseEntry{}, fmt.Errorf("%q is not a lease index key (want leases/{ms}/{shard}/{id})", key)
	}
	at, ok := parseMS(parts[0])
	if !ok {
		return LeaseEntry{}, fmt.Errorf("lease index key %q: bad timestamp %q", key, parts[0])
	}
	if !isHex(parts[1]) {
		return LeaseEntry{}, fmt.Errorf("lease index key %q: bad shard %q", key, parts[1])
	}
	id, err := uuid.Parse(parts[2])
	if err != nil || len(parts[2]) != 36 || !strings.HasPrefix(id.String(), parts[1]) {
		return LeaseEntry{}, fmt.Errorf("lease index key %q: bad task id %q", key, parts[2])
	}
	return LeaseEntry{Key: key, ID: id, Shard: parts[1], ExpiresAt: at}, nil
}

// allShards lists every shard name for n hex characters, in key order.
func allShards(n int) []string {
	const hex = "0123456789abcdef"
	out := []string{""}
	for i := 0; i < n; i++ {
		next := make([]string, 0, len(out)*16)
		for _, p := range out {
			for j := 0; j < 16; j++ {
				next = append(next, p+string(hex[j]))
			}
		}
		out = next
	}
	return out
}
