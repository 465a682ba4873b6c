package storetest

import (
	"context"
	"slices"
	"sync"

	"github.com/qo-queue/qo/store"
)

// TearingStore is a store with the fault of a server that tears reads:
// every other Get of a key returns the body of the write before the
// latest one with the ETag (and version id) of the latest. versitygw with
// sidecar metadata did this under concurrent writes. Only writes made
// through the wrapper are known to it. For tests that prove a check
// catches the fault; it does not pass the conformance suite.
type TearingStore struct {
	store.Store

	mu   sync.Mutex
	gets int
	torn int
	prev map[string][]byte // the body before the latest write, per key
	last map[string][]byte // the latest body written, per key
}

// Torn returns how many torn reads the store returned.
func (t *TearingStore) Torn() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.torn
}

// Tearing wraps s in a TearingStore.
func Tearing(s store.Store) *TearingStore {
	return &TearingStore{Store: s, prev: map[string][]byte{}, last: map[string][]byte{}}
}

// Put implements store.Store.
func (t *TearingStore) Put(ctx context.Context, key string, body []byte, cond store.Condition) (store.PutResult, error) {
	res, err := t.Store.Put(ctx, key, body, cond)
	if err == nil {
		t.mu.Lock()
		if last, ok := t.last[key]; ok {
			t.prev[key] = last
		}
		t.last[key] = slices.Clone(body)
		t.mu.Unlock()
	}
	return res, err
}

// Get implements store.Store, tearing every other read of a key that has
// a previous body.
func (t *TearingStore) Get(ctx context.Context, key string) (*store.Object, error) {
	obj, err := t.Store.Get(ctx, key)
	if err != nil {
		return obj, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.gets++
	prev, ok := t.prev[key]
	if ok && t.gets%2 == 0 && string(obj.Body) == string(t.last[key]) {
		obj.Body = slices.Clone(prev)
		t.torn++
	}
	return obj, nil
}

// ReversedVersions is a store whose ListVersions lists oldest first, as
// gofakes3 does, with IsLatest still on the newest version.
type ReversedVersions struct{ store.Store }

// ListVersions implements store.Store.
func (r ReversedVersions) ListVersions(ctx context.Context, key string) ([]store.Version, error) {
	vs, err := r.Store.ListVersions(ctx, key)
	slices.Reverse(vs)
	return vs, err
}
