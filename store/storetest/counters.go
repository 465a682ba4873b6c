package storetest

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/store"
)

func testCounters(t *testing.T, s store.Store) {
	c, ok := s.(store.Counted)
	if !ok {
		t.Skip("the store does not count requests")
	}
	ctx := ctxFor(t)
	res, err := s.Put(ctx, "cnt/a", []byte("a"), store.Condition{})
	require.NoError(t, err)

	steps := []struct {
		name   string
		op     store.Op
		failed bool
		do     func() error
	}{
		{"put", store.OpPut, false, func() error {
			_, err := s.Put(ctx, "cnt/b", []byte("b"), store.Condition{})
			return err
		}},
		{"lost put", store.OpPut, true, func() error {
			_, err := s.Put(ctx, "cnt/a", []byte("x"), store.CreateOnly)
			if errors.Is(err, store.ErrPreconditionFailed) {
				return nil
			}
			return fmt.Errorf("want precondition failed, got %v", err)
		}},
		{"get", store.OpGet, false, func() error {
			_, err := s.Get(ctx, "cnt/a")
			return err
		}},
		{"get missing", store.OpGet, true, func() error {
			_, err := s.Get(ctx, "cnt/missing")
			if errors.Is(err, store.ErrNotFound) {
				return nil
			}
			return fmt.Errorf("want not found, got %v", err)
		}},
		{"get version", store.OpGet, false, func() error {
			_, err := s.GetVersion(ctx, "cnt/a", res.VersionID)
			return err
		}},
		{"list", store.OpList, false, func() error {
			_, err := s.List(ctx, store.ListParams{Prefix: "cnt/"})
			return err
		}},
		{"list versions", store.OpListVersions, false, func() error {
			_, err := s.ListVersions(ctx, "cnt/a")
			return err
		}},
		{"delete", store.OpDelete, false, func() error {
			return s.Delete(ctx, "cnt/b", store.Condition{})
		}},
	}
	for _, st := range steps {
		before := c.Requests().Snapshot()
		require.NoError(t, st.do(), st.name)
		d := c.Requests().Snapshot().Sub(before)
		if st.failed {
			require.GreaterOrEqual(t, d.Failed[st.op], int64(1), "%s: counted as failed: %s", st.name, d)
		} else {
			require.GreaterOrEqual(t, d.OK[st.op], int64(1), "%s: counted as ok: %s", st.name, d)
		}
		for _, op := range store.Ops {
			if op != st.op && op != store.OpHead && op != store.OpOther {
				require.Zero(t, d.Total(op), "%s: counted as %s too: %s", st.name, op, d)
			}
		}
	}
}
