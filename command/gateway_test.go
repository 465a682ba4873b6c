package command

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"
)

// The hidden qo gateway command applies qo dev's rule (checkListenAddr)
// before starting anything.
func TestGatewayRefusesListeningBeyondLoopback(t *testing.T) {
	var out, errOut bytes.Buffer
	code := runApp([]string{"qo", "gateway", "--data-dir", t.TempDir(), "--addr", "0.0.0.0:0"}, &out, &errOut)
	require.Equal(t, exitUsage, code, errOut.String())
	require.Contains(t, errOut.String(), "QO_GATEWAY_INSECURE_LISTEN")
	require.Empty(t, out.String())
}
