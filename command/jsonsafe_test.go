package command

import (
	"bytes"
	"encoding/json"
	"flag"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/urfave/cli/v2"

	"github.com/qo-queue/qo/queue"
)

// hostileOutput is an output a handler can return: an OSC that retitles
// the terminal (escaped by any JSON encoder, as a C0 control), an 8-bit
// CSI that clears the screen, DEL, and bidi controls that reorder what is
// shown (both left raw by encoding/json).
const hostileOutput = "\x1b]0;title\x07 \u009b2J \x7f \u202eevil\u2066\u200f"

// rawInJSON are the characters none of qo's JSON may carry raw.
var rawInJSON = []string{"\x1b", "\x07", "\u009b", "\x7f", "\u202e", "\u2066", "\u200f"}

func requireNoRaw(t *testing.T, what, out string) {
	t.Helper()
	for _, raw := range rawInJSON {
		require.NotContains(t, out, raw, "%s prints a raw %q:\n%s", what, raw, out)
	}
}

// TestJSONOutputEscapesTerminalControls: --json of status, list and
// history prints no C1 control, DEL or bidi character raw, and decodes to
// the same value.
func TestJSONOutputEscapesTerminalControls(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *cliEnv) {
		task := e.submit("mail", `{}`, 0)
		out, err := json.Marshal(map[string]string{"out": hostileOutput})
		require.NoError(t, err)
		_, err = e.q.Complete(t.Context(), e.claim(task.ID, "w1"), json.RawMessage(out))
		require.NoError(t, err)

		r := e.run("status", task.ID.String(), "--json")
		require.Equal(t, 0, r.code, "%s", r)
		requireNoRaw(t, "qo status --json", r.stdout)
		var got struct {
			Output struct{ Out string } `json:"output"`
		}
		require.NoError(t, json.Unmarshal([]byte(r.stdout), &got), r.stdout)
		require.Equal(t, hostileOutput, got.Output.Out, "the same value")

		for _, args := range [][]string{
			{"list", "--since", "1h", "--json"},
			{"history", task.ID.String(), "--json"},
		} {
			r := e.run(args...)
			require.Equal(t, 0, r.code, "%s", r)
			requireNoRaw(t, "qo "+strings.Join(args, " "), r.stdout)
			require.Contains(t, r.stdout, `\u009b2J \u007f \u202eevil\u2066\u200f`, "qo %s: escaped", strings.Join(args, " "))
			dec := json.NewDecoder(strings.NewReader(r.stdout))
			for dec.More() {
				var v any
				require.NoError(t, dec.Decode(&v), "qo %s prints valid JSON", strings.Join(args, " "))
			}
		}
	})
}

// TestJSONLogsEscapeTerminalControls: a JSON log record carrying hostile
// text (an error from a handler, a task type) is escaped the same way.
func TestJSONLogsEscapeTerminalControls(t *testing.T) {
	t.Parallel()
	var stderr bytes.Buffer
	app := &cli.App{ErrWriter: &stderr}
	set := flag.NewFlagSet("test", flag.ContinueOnError)
	for _, f := range logFlags() {
		require.NoError(t, f.Apply(set))
	}
	require.NoError(t, set.Parse([]string{"--log-format", "json"}))
	log, err := cmdLogger(cli.NewContext(app, set, nil))
	require.NoError(t, err)
	log.Warn("task failed", "err", hostileOutput, queue.ErrConflict.Error(), "x")
	requireNoRaw(t, "a JSON log record", stderr.String())
	var rec map[string]any
	require.NoError(t, json.Unmarshal(stderr.Bytes(), &rec), stderr.String())
	require.Equal(t, hostileOutput, rec["err"], "the same value")
}
