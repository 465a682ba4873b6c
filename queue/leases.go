package queue

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/qo-queue/qo/store"
)

// NamedLease is a coordination lease held in one small object: shard
// ownership ("shard-leases/{shard}.json") or the monitor leadership
// ("monitor/leader.json"). ETag is the If-Match of the holder's next write.
type NamedLease struct {
	Name       string    // the object key
	Holder     string    // "" when released
	ExpiresAt  time.Time // authoritative (queue clock) expiry
	AcquiredAt time.Time // when the current holder took it
	ETag       string
}

// leaseRecord is the on-bucket form of a named lease.
type leaseRecord struct {
	Format     int       `json:"format"`
	Name       string    `json:"name"`
	Holder     string    `json:"holder"`
	ExpiresAt  time.Time `json:"expires_at"`
	AcquiredAt time.Time `json:"acquired_at"`
	UpdatedAt  time.Time `json:"updated_at"`
	RequestID  string    `json:"request_id"`
}

// ValidateLeaseKey checks that key names a named lease: a key under
// ShardLeasePrefix or MonitorPrefix ending in .json.
func ValidateLeaseKey(key string) error {
	if !(strings.HasPrefix(key, ShardLeasePrefix) || strings.HasPrefix(key, MonitorPrefix)) ||
		!strings.HasSuffix(key, ".json") || strings.Contains(key, "..") || strings.Contains(key, "//") {
		return invalidInput("lease key %q must be %s{name}.json or %s{name}.json", key, ShardLeasePrefix, MonitorPrefix)
	}
	return nil
}

// EncodeNamedLease is the body of a write of l made at now; requestID
// tells the writer, re-reading after a lost response, whether its write
// landed (see DecodeNamedLease).
func EncodeNamedLease(l *NamedLease, now time.Time, requestID string) ([]byte, error) {
	return json.Marshal(leaseRecord{Format: FormatVersion, Name: l.Name, Holder: l.Holder, ExpiresAt: l.ExpiresAt,
		AcquiredAt: l.AcquiredAt, UpdatedAt: now, RequestID: requestID})
}

// DecodeNamedLease parses the named lease obj found at key, and the
// request id of the write that made it.
func DecodeNamedLease(key string, obj *store.Object) (*NamedLease, string, error) {
	var r leaseRecord
	if err := json.Unmarshal(obj.Body, &r); err != nil {
		return nil, "", &MalformedError{Key: key, Err: err}
	}
	if r.Format != FormatVersion {
		return nil, "", &MalformedError{Key: key, Err: fmt.Errorf("unknown format version %d (this qo reads format %d)", r.Format, FormatVersion)}
	}
	if r.Name != key {
		return nil, "", &MalformedError{Key: key, Err: fmt.Errorf("object says name %q", r.Name)}
	}
	return &NamedLease{Name: key, Holder: r.Holder, ExpiresAt: r.ExpiresAt, AcquiredAt: r.AcquiredAt, ETag: obj.ETag}, r.RequestID, nil
}
