/* When the files transport looks for the next request: pure arithmetic over what it has
 * learnt (core.h). */
#include "core.h"

static int64_t clamp64(int64_t v, int64_t lo, int64_t hi)
{
	return v < lo ? lo : v > hi ? hi : v;
}

void mafh__pacing_init(struct mafh__pacing *p, int64_t poll_min_ms, int64_t poll_max_ms)
{
	*p = (struct mafh__pacing){.poll_min_ms = poll_min_ms, .poll_max_ms = poll_max_ms,
				   .gap_ms = MAFH__SHIM_POLL_MS};
}

void mafh__pacing_observe(struct mafh__pacing *p, int64_t took_ms)
{
	double took = (double)took_ms;

	p->lat_ms = p->lat_ms ? 0.75 * p->lat_ms + 0.25 * took : took;
}

int64_t mafh__pacing_launched(struct mafh__pacing *p, int64_t now)
{
	p->last_activity_ms = now;
	/* Nothing can be waiting yet: give the program a moment to start. */
	return now + (int64_t)p->gap_ms;
}

int64_t mafh__pacing_answered(struct mafh__pacing *p, int64_t now)
{
	int64_t lead = (int64_t)(p->gap_ms - p->lat_ms);

	p->misses = 0;
	p->last_answer_ms = now;
	p->last_activity_ms = now;
	return now + clamp64(lead, 0, p->poll_max_ms);
}

void mafh__pacing_found(struct mafh__pacing *p)
{
	/* Found at the first look after an answer: try a little sooner next time (a miss
	 * pushes the gap back up by half). */
	if (p->misses == 0 && p->last_answer_ms && p->gap_ms > (double)p->poll_min_ms)
		p->gap_ms *= 0.995;
}

void mafh__pacing_stepped(struct mafh__pacing *p)
{
	p->misses = 0;
}

int mafh__pacing_missed(struct mafh__pacing *p)
{
	p->misses++;
	/* Most programs are still starting up before their first call. */
	return p->misses % (p->last_answer_ms ? 2 : 3) == 0;
}

int64_t mafh__pacing_next_after_miss(struct mafh__pacing *p, int64_t now)
{
	int64_t base = (int64_t)(p->gap_ms / 4), iv, quiet, top;

	if (p->misses == 1 && p->last_answer_ms && p->lat_ms >= 2.0) {
		/* Looked too early right after an answer: learn a longer gap. Only where a look
		 * is costly: where it is cheap, the quick retry below already realigns the
		 * first look with the program's cadence (the shim's 50 ms poll), and a longer
		 * gap would push answers past the shim's next poll. */
		p->gap_ms = p->gap_ms * 1.5;
		if (p->gap_ms > p->poll_max_ms)
			p->gap_ms = (double)p->poll_max_ms;
	}
	if (base < 2 * (int64_t)p->lat_ms)
		base = 2 * (int64_t)p->lat_ms;
	iv = base << (p->misses > 6 ? 6 : p->misses < 1 ? 0 : p->misses - 1);
	quiet = now - p->last_activity_ms;
	if (iv < quiet)
		iv = quiet;
	/* A slow backend is polled less often: up to 24 op latencies apart, even past
	 * poll_max_ms. */
	top = p->poll_max_ms;
	if (top < 24 * (int64_t)p->lat_ms)
		top = 24 * (int64_t)p->lat_ms;
	return now + clamp64(iv, p->poll_min_ms, top);
}
