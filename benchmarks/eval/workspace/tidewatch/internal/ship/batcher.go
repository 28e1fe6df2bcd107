package ship

import (
	"context"
	"time"
)

const (
	// MaxBatchSamples bounds one gRPC request; larger batches hit the ingester's
	// 16 MB message limit after zstd on very high-cardinality targets.
	MaxBatchSamples = 10000
	// FLUSH_INTERVAL is how long a partial batch may wait before it is sent anyway.
	FLUSH_INTERVAL = 5 * time.Second
)

type Sample struct {
	Series    uint64
	Timestamp int64
	Value     float64
}

type Sender interface {
	Send(ctx context.Context, batch []Sample) error
}

// Batcher collects samples and ships them when the batch is full or the flush
// interval has passed, whichever comes first.
type Batcher struct {
	in     chan Sample
	sender Sender
	wal    *WAL
}

func (b *Batcher) Run(ctx context.Context) error {
	batch := make([]Sample, 0, MaxBatchSamples)
	ticker := time.NewTicker(FLUSH_INTERVAL)
	defer ticker.Stop()
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		if err := b.sender.Send(ctx, batch); err != nil {
			// Keep it in the WAL; replay after restart or on the next flush.
			return b.wal.Append(batch)
		}
		batch = batch[:0]
		return nil
	}
	for {
		select {
		case <-ctx.Done():
			_ = flush()
			return b.wal.Sync()
		case s := <-b.in:
			batch = append(batch, s)
			if len(batch) >= MaxBatchSamples {
				if err := flush(); err != nil {
					return err
				}
			}
		case <-ticker.C:
			if err := flush(); err != nil {
				return err
			}
		}
	}
}
