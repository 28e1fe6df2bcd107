package scrape

import (
	"context"
	"hash/fnv"
	"log/slog"
	"time"
)

// Scheduler starts one scrape per target per interval. Start offsets are spread
// over the interval by a hash of the URL so thousands of targets never fire together
// and each target keeps the same phase across restarts.
type Scheduler struct {
	interval time.Duration
	targets  []Target
	scrape   func(context.Context, Target)
}

func NewScheduler(interval time.Duration, targets []Target, scrape func(context.Context, Target)) *Scheduler {
	return &Scheduler{interval: interval, targets: targets, scrape: scrape}
}

func offset(url string, interval time.Duration) time.Duration {
	h := fnv.New64a()
	h.Write([]byte(url))
	return time.Duration(h.Sum64() % uint64(interval))
}

// Tick runs until ctx is done.
func (s *Scheduler) Tick(ctx context.Context) {
	for _, t := range s.targets {
		go s.loop(ctx, t)
	}
	<-ctx.Done()
}

func (s *Scheduler) loop(ctx context.Context, t Target) {
	timer := time.NewTimer(offset(t.URL, s.interval))
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
			start := time.Now()
			scrapeCtx, cancel := context.WithTimeout(ctx, t.Timeout)
			s.scrape(scrapeCtx, t)
			cancel()
			slog.Debug("scraped", "target", t.URL, "duration", time.Since(start))
			timer.Reset(s.interval)
		}
	}
}
