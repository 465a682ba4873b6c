package devenv

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/store"
	"github.com/qo-queue/qo/store/s3store"
)

// connectQueue connects to the environment's bucket and prepares it (see
// prepareQueue).
func connectQueue(ctx context.Context, st *State, log *slog.Logger) (*queue.Queue, error) {
	s, err := s3store.New(ctx, st.StoreConfig())
	if err != nil {
		return nil, fmt.Errorf("connect to the embedded S3 server: %w", err)
	}
	return prepareQueue(ctx, s, st.Bucket, log)
}

// adminStore is a store that can also configure its bucket.
type adminStore interface {
	store.Store
	store.Admin
}

// prepareQueue opens the queue in the bucket, creating it on first use,
// and opens the bucket's CORS to any origin for the web UI.
func prepareQueue(ctx context.Context, s adminStore, bucket string, log *slog.Logger) (*queue.Queue, error) {
	qopts := queue.Options{Logger: log}
	q, err := queue.Open(ctx, s, qopts)
	if errors.Is(err, queue.ErrNotInitialized) {
		// The gateway has no lifecycle rules; init's warning about that
		// is noise on a developer's machine, so its outcome is one line.
		var res queue.InitResult
		res, err = queue.InitWithOptions(ctx, s, queue.InitOptions{ShardChars: 1, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			return nil, fmt.Errorf("create the queue in bucket %q: %w", bucket, err)
		}
		log.Info("queue created", "bucket", bucket, "shard_chars", res.Config.ShardChars, "versioning", res.Versioning, "lifecycle", res.Lifecycle)
		q, err = queue.Open(ctx, s, qopts)
	}
	if errors.Is(err, queue.ErrLayoutOutdated) {
		// The dev server's data was written by an older qo, and only this
		// process uses it: convert it in place (nothing is lost). A
		// registry entry of an earlier dev run is no live worker.
		res, merr := queue.Migrate(ctx, s, qopts, queue.MigrateOptions{Force: true})
		if merr != nil {
			return nil, fmt.Errorf("convert the dev queue in bucket %q to the current key layout: %w ('qo dev --reset' starts over)", bucket, merr)
		}
		log.Info("dev queue converted to the current key layout", "bucket", bucket, "from", res.From, "to", res.To,
			"tasks_checked", res.Repair.Scanned, "seconds", res.Duration.Seconds())
		q, err = queue.Open(ctx, s, qopts)
	}
	if err != nil {
		return nil, fmt.Errorf("open the queue in bucket %q: %w", bucket, err)
	}
	// The gateway listens on this machine only: any origin may use it.
	switch err := s.SetCORS(ctx, []string{"*"}); {
	case err == nil:
	case errors.Is(err, store.ErrNotSupported):
		log.Info("the S3 server does not support bucket CORS; the web UI may not reach it", "err", err)
	default:
		return nil, fmt.Errorf("set CORS on bucket %q for the web UI: %w", bucket, err)
	}
	return q, nil
}
