package command

import (
	"log/slog"
	"os"

	"github.com/urfave/cli/v2"

	"github.com/qo-queue/qo/internal/termsafe"
)

// stderrLogger prints warnings (and nothing chattier) on the app's error
// writer.
func stderrLogger(c *cli.Context) *slog.Logger {
	return slog.New(slog.NewTextHandler(c.App.ErrWriter, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

func logFlags() []cli.Flag {
	const cat = "Logging"
	return []cli.Flag{
		&cli.StringFlag{Name: "log-level", Category: cat, EnvVars: []string{"QO_LOG_LEVEL"}, Value: "info",
			Usage: "debug, info, warn or error"},
		&cli.StringFlag{Name: "log-format", Category: cat, EnvVars: []string{"QO_LOG_FORMAT"}, Value: "auto",
			Usage: "text, json, or auto (text on a terminal, JSON otherwise)"},
	}
}

// cmdLogger builds the slog logger of long-running commands: on stderr,
// text on a terminal and JSON otherwise (or as --log-format says). JSON
// records have the characters a terminal acts on escaped (termsafe.JSON):
// they are read with kubectl logs and less too.
func cmdLogger(c *cli.Context) (*slog.Logger, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(c.String("log-level"))); err != nil {
		return nil, usageError("invalid --log-level %q: want debug, info, warn or error", c.String("log-level"))
	}
	w := c.App.ErrWriter
	if w == nil {
		w = os.Stderr
	}
	ho := &slog.HandlerOptions{Level: level}
	switch f := c.String("log-format"); f {
	case "text":
		return slog.New(slog.NewTextHandler(w, ho)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(termsafe.JSONWriter(w), ho)), nil
	case "auto", "":
		if envOf(c).IsTerminal(w) {
			return slog.New(slog.NewTextHandler(w, ho)), nil
		}
		return slog.New(slog.NewJSONHandler(termsafe.JSONWriter(w), ho)), nil
	default:
		return nil, usageError("invalid --log-format %q: want text, json or auto", f)
	}
}
