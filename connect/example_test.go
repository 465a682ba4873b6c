package connect_test

import (
	"context"
	"fmt"
	"log"

	"github.com/qo-queue/qo/connect"
	"github.com/qo-queue/qo/queue"
)

// One call opens the queue the environment names (S3_BUCKET, S3_ENDPOINT,
// ...), or the bucket of a `qo dev` running on this machine when none is
// set.
func ExampleOpen() {
	ctx := context.Background()
	q, err := connect.Open(ctx, queue.Options{})
	if err != nil {
		log.Fatal(err) // e.g. "connect: no bucket configured: set S3_BUCKET ..."
	}
	_ = q // submit and work as in the queue and worker examples
}

// Settings can come from elsewhere than the environment (a config file,
// flags); StoreConfig applies the qo command's rules to them.
func ExampleSettings_StoreConfig() {
	s := connect.Settings{Bucket: "jobs", Endpoint: "http://127.0.0.1:9000"}
	cfg, err := s.StoreConfig(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("bucket %s at %s, path style %v\n", cfg.Bucket, cfg.Endpoint, cfg.PathStyle)
	// Output:
	// bucket jobs at http://127.0.0.1:9000, path style true
}
