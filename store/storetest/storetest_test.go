package storetest

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/store/memstore"
)

// The conformance case NoTornReads fails a store that tears reads, and
// passes one that does not.
func TestTornReadsCaseCatchesTearing(t *testing.T) {
	t.Parallel()
	tearing := Tearing(memstore.New())
	bad, reads, err := tornReads(t.Context(), tearing, "torn/task.json", tornShortWrites, tornReaders)
	require.NoError(t, err)
	require.NotZero(t, tearing.Torn(), "the wrapper tore reads")
	require.Len(t, bad, tearing.Torn(), "every torn read is reported, nothing else")
	require.Contains(t, bad[0], "(torn)")
	require.GreaterOrEqual(t, reads, tornReaders, "each reader reads the last write at least")

	bad, _, err = tornReads(t.Context(), memstore.New(), "torn/task.json", tornShortWrites, tornReaders)
	require.NoError(t, err)
	require.Empty(t, bad)
}
