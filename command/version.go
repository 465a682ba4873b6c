package command

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"

	"github.com/urfave/cli/v2"
)

// Build says which build of qo runs. Package main passes what the linker
// set (-ldflags "-X main.version=... -X main.commit=... -X main.date=...");
// what it left empty comes from the module and VCS information Go embeds
// in the binary.
type Build struct {
	Version string // "dev" or empty when not set at build time
	Commit  string
	Date    string
}

// resolved fills in what the linker did not set from the build
// information Go embeds in the binary.
func (b Build) resolved() Build {
	if b.Version == "" {
		b.Version = "dev"
	}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return b
	}
	if b.Version == "dev" && info.Main.Version != "" && info.Main.Version != "(devel)" {
		b.Version = info.Main.Version
	}
	for _, s := range info.Settings {
		switch {
		case s.Key == "vcs.revision" && b.Commit == "":
			b.Commit = s.Value
			if len(b.Commit) > 12 {
				b.Commit = b.Commit[:12]
			}
		case s.Key == "vcs.time" && b.Date == "":
			b.Date = s.Value
		}
	}
	return b
}

// String is the version as qo --version prints it: "v1.2.3 (commit
// 0123456789ab, built 2025-06-01T08:00:00Z)".
func (b Build) String() string {
	s := b.Version
	if b.Commit != "" {
		s += " (commit " + b.Commit
		if b.Date != "" {
			s += ", built " + b.Date
		}
		s += ")"
	}
	return s
}

func versionCommand(build Build) *cli.Command {
	return &cli.Command{
		Name:      "version",
		Usage:     "print qo's version",
		UsageText: "qo version [--json]",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "json", Usage: "print as JSON"},
		},
		Action: kit[noOptions, Build]{
			options: readNoOptions,
			run:     func(context.Context, *runEnv, noOptions) (Build, error) { return build, nil },
			text: func(w io.Writer, b Build) error {
				_, err := fmt.Fprintf(w, "qo %s %s/%s %s\n", b, runtime.GOOS, runtime.GOARCH, runtime.Version())
				return err
			},
			json: func(b Build) any {
				return map[string]string{
					"version": b.Version, "commit": b.Commit, "date": b.Date, "go": runtime.Version(),
					"os": runtime.GOOS, "arch": runtime.GOARCH,
				}
			},
		}.action(),
	}
}
