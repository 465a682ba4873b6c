package command

import (
	"fmt"
	"log/slog"

	"github.com/urfave/cli/v2"

	"github.com/qo-queue/qo/store/gateway"
)

// gatewayCommand is qo gateway: hidden plumbing that runs the embedded S3
// server in the foreground. Tests and scripts use it; `qo dev` is the
// friendly way.
func gatewayCommand() *cli.Command {
	return &cli.Command{
		Name:      "gateway",
		Hidden:    true,
		Usage:     "run the embedded S3 server (versitygw) in the foreground",
		UsageText: "qo gateway --data-dir DIR [--addr 127.0.0.1:0] [--bucket qo-dev]",
		Description: `Starts the embedded S3 server on a local address, creates the bucket with
versioning, prints the environment that points qo at it, one VAR=value per line
on stdout, and serves until interrupted (SIGINT or SIGTERM stop it cleanly):

  S3_ENDPOINT=http://127.0.0.1:PORT
  S3_BUCKET=...
  S3_REGION=...
  S3_PATH_STYLE=true
  AWS_ACCESS_KEY_ID=...
  AWS_SECRET_ACCESS_KEY=...

Example:
  qo gateway --data-dir /tmp/qo-data --addr 127.0.0.1:9000`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "data-dir", Usage: "keep buckets and versions under `DIR`", EnvVars: []string{"QO_GATEWAY_DATA_DIR"}},
			&cli.StringFlag{Name: "addr", Value: gateway.DefaultAddr, Usage: "listen on `HOST:PORT` (port 0: a free port; loopback unless --insecure-listen)"},
			&cli.BoolFlag{Name: "insecure-listen", EnvVars: []string{"QO_GATEWAY_INSECURE_LISTEN"},
				Usage: "allow an --addr other machines can reach (the server has root keys)"},
			&cli.StringFlag{Name: "bucket", Value: "qo-dev", Usage: "create this versioned bucket if missing (empty: none)"},
			&cli.StringFlag{Name: "region", Value: gateway.DefaultRegion, Usage: "region reported to clients"},
			&cli.StringFlag{Name: "access-key", Value: "qo-dev", EnvVars: []string{"QO_GATEWAY_ACCESS_KEY"}, Usage: "access key clients sign with"},
			&cli.StringFlag{Name: "secret-key", Value: "qo-dev-secret", EnvVars: []string{"QO_GATEWAY_SECRET_KEY"}, Usage: "secret key clients sign with"},
		},
		Action: runGateway,
	}
}

func runGateway(c *cli.Context) error {
	if c.String("data-dir") == "" {
		return usageError("--data-dir is required: the directory that keeps the gateway's buckets")
	}
	warning, err := checkListenAddr("qo gateway", c.String("addr"), c.Bool("insecure-listen"), "QO_GATEWAY_INSECURE_LISTEN")
	if err != nil {
		return err
	}
	if warning != "" {
		fmt.Fprintln(c.App.ErrWriter, "qo gateway: "+warning)
	}
	g, err := gateway.Start(c.Context, gateway.Options{
		DataDir:   c.String("data-dir"),
		Addr:      c.String("addr"),
		AccessKey: c.String("access-key"),
		SecretKey: c.String("secret-key"),
		Region:    c.String("region"),
		Bucket:    c.String("bucket"),
		Logger:    slog.New(slog.NewTextHandler(c.App.ErrWriter, nil)),
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(c.App.Writer, "S3_ENDPOINT=%s\nS3_BUCKET=%s\nS3_REGION=%s\nS3_PATH_STYLE=true\nAWS_ACCESS_KEY_ID=%s\nAWS_SECRET_ACCESS_KEY=%s\n",
		g.Endpoint(), c.String("bucket"), g.Region(), c.String("access-key"), c.String("secret-key"))
	fmt.Fprintf(c.App.ErrWriter, "qo gateway: serving %s (data in %s); interrupt to stop\n", g.Endpoint(), c.String("data-dir"))
	select {
	case <-c.Context.Done():
		return g.Stop()
	case <-g.Done():
		_ = g.Stop()
		return fmt.Errorf("gateway: the server process exited unexpectedly: %v", g.Err())
	}
}
