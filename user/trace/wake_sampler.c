// SPDX-License-Identifier: GPL-2.0
/*
 * Wake probes attached part of the time (wake_sampler.h). Windows are periodic, not
 * random: wakes in a server are many and spread over the period, and fixed edges
 * keep the attach and detach cost (a uprobe_multi link of a few probes: milliseconds,
 * measured and reported) predictable.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <unistd.h>

#include "lib/sysfacts.h"
#include "lib/uprobe_multi.h"
#include "trace/wake_sampler.h"

struct wake_sampler {
	int prog_fd;
	const char *path;
	pid_t pid;
	unsigned long *offsets;
	__u64 *cookies;
	uint32_t n;
	uint64_t period_ns, window_ns;
	int fd;		 /* the link while a window is open, else -1 */
	uint64_t first;	 /* when the first window opened, 0 before */
	uint64_t start;	 /* the current period's start (its window opens there) */
	uint64_t opened; /* when the open link was attached */
	uint64_t next;	 /* the next edge */
	bool in_window, stopped;
	void (*toggled)(void *ctx, bool attached); /* wake_sampler__on_toggle */
	void *toggled_ctx;
	struct wake_sample s;
};

struct wake_sampler *wake_sampler__new(int prog_fd, const char *path, pid_t pid,
				       const struct trace_plan *plan, double fraction,
				       uint64_t period_ns)
{
	struct wake_sampler *ws;
	uint32_t n = 0;

	for (uint32_t i = 0; i < plan->nr; i++)
		n += (plan->specs[i].kind & PROBE_WAKE) && !plan->returns[i];
	if (!n || !(fraction > 0 && fraction < 1) || !period_ns)
		return NULL;
	ws = calloc(1, sizeof(*ws));
	if (!ws)
		return NULL;
	ws->offsets = calloc(n, sizeof(*ws->offsets));
	ws->cookies = calloc(n, sizeof(*ws->cookies));
	if (!ws->offsets || !ws->cookies) {
		wake_sampler__free(ws);
		return NULL;
	}
	for (uint32_t i = 0; i < plan->nr; i++)
		if ((plan->specs[i].kind & PROBE_WAKE) && !plan->returns[i]) {
			ws->offsets[ws->n] = plan->offsets[i];
			ws->cookies[ws->n++] = plan->cookies[i];
		}
	ws->prog_fd = prog_fd;
	ws->path = path;
	ws->pid = pid;
	ws->fd = -1;
	ws->period_ns = period_ns;
	ws->window_ns = (uint64_t)((double)period_ns * fraction);
	if (!ws->window_ns)
		ws->window_ns = 1;
	ws->s.fraction = fraction;
	return ws;
}

static void close_window(struct wake_sampler *ws, uint64_t now)
{
	uint64_t t0 = sysfacts__now_ns();

	if (ws->toggled)
		ws->toggled(ws->toggled_ctx, false);
	close(ws->fd); /* detaches: the kernel removes the breakpoints */
	ws->fd = -1;
	ws->s.toggle_ns += sysfacts__now_ns() - t0;
	ws->s.on_ns += now - ws->opened;
}

static void open_window(struct wake_sampler *ws)
{
	uint64_t t0 = sysfacts__now_ns();
	int fd = uprobe_multi__attach(ws->prog_fd, ws->path, ws->offsets, ws->cookies, ws->n,
				      ws->pid, false);

	ws->s.toggle_ns += sysfacts__now_ns() - t0;
	if (fd < 0) {
		ws->s.failures++;
		ws->s.last_error = fd;
		return;
	}
	ws->fd = fd;
	ws->opened = sysfacts__now_ns(); /* wakes are seen from here */
	ws->s.windows++;
	if (ws->toggled)
		ws->toggled(ws->toggled_ctx, true);
}

uint64_t wake_sampler__pulse(struct wake_sampler *ws, uint64_t now)
{
	if (!ws || ws->stopped)
		return 0;
	if (!ws->first) { /* the first window opens now */
		ws->first = ws->start = now;
		ws->in_window = true;
		open_window(ws);
		ws->next = ws->start + ws->window_ns;
		return ws->next;
	}
	while (now >= ws->next) {
		if (ws->in_window) { /* the window ends */
			if (ws->fd >= 0)
				close_window(ws, now);
			ws->in_window = false;
			ws->start += ws->period_ns;
			ws->next = ws->start;
			continue;
		}
		/* the next window: a period missed entirely (a stalled caller) is skipped */
		if (now >= ws->start + ws->window_ns) {
			ws->start += (now - ws->start) / ws->period_ns * ws->period_ns;
			if (now >= ws->start + ws->window_ns)
				ws->start += ws->period_ns;
			ws->next = ws->start;
			continue;
		}
		ws->in_window = true;
		open_window(ws);
		ws->next = ws->start + ws->window_ns;
	}
	return ws->next;
}

void wake_sampler__stop(struct wake_sampler *ws, uint64_t now)
{
	if (!ws || ws->stopped)
		return;
	if (ws->fd >= 0)
		close_window(ws, now);
	ws->s.run_ns = ws->first && now > ws->first ? now - ws->first : 0;
	ws->stopped = true;
}

void wake_sampler__stats(const struct wake_sampler *ws, struct wake_sample *out)
{
	*out = ws ? ws->s : (struct wake_sample){0};
}

void wake_sampler__free(struct wake_sampler *ws)
{
	if (!ws)
		return;
	if (ws->fd >= 0)
		close(ws->fd);
	free(ws->offsets);
	free(ws->cookies);
	free(ws);
}

void wake_sampler__on_toggle(struct wake_sampler *ws, void (*fn)(void *ctx, bool attached),
			     void *ctx)
{
	ws->toggled = fn;
	ws->toggled_ctx = ctx;
}

uint64_t wake_sampler__on_ns(const struct wake_sampler *ws, uint64_t now)
{
	return ws->s.on_ns + (ws->fd >= 0 && now > ws->opened ? now - ws->opened : 0);
}
