// Command qo is a distributed task queue that needs nothing but an
// S3-compatible bucket.
//
// This package is the binary's entry point only. The commands live in
// package command, one file per command or command group with the shared
// helpers in files named for what they are; the local environment qo dev
// starts (gateway, queue, worker, state file) is package devenv, below
// it. main hands command.Run the build information the linker sets and
// exits with the code it returns.
package main

import (
	"os"

	// TLS to S3 works in an image with no CA file (the release image is
	// empty but for qo): these roots are used only when the system has none.
	_ "golang.org/x/crypto/x509roots/fallback"

	"github.com/qo-queue/qo/command"
	"github.com/qo-queue/qo/store/gateway"
)

// Set at build time with -ldflags "-X main.version=... -X main.commit=... -X main.date=...".
var (
	version = "dev"
	commit  = ""
	date    = ""
)

func main() {
	gateway.MaybeRunChild() // returns unless this process is the embedded gateway's child
	os.Exit(command.Run(os.Args, command.OSEnv(), command.Build{Version: version, Commit: commit, Date: date}))
}
