package queue_test

import (
	"os"
	"os/user"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/queue"
)

func TestActorNamesUserAndHost(t *testing.T) {
	t.Parallel()
	u, err := user.Current()
	require.NoError(t, err)
	host, err := os.Hostname()
	require.NoError(t, err)
	require.Equal(t, u.Username+"@"+host, queue.Actor())
	require.Equal(t, "outage ("+u.Username+"@"+host+", qo pause)", queue.ActorReason("outage", "paused", "qo pause"))
	require.Equal(t, "paused ("+u.Username+"@"+host+", qo pause)", queue.ActorReason("  ", "paused", "qo pause"))
}
