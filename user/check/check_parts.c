// SPDX-License-Identifier: GPL-2.0
/* What each part of asyncbpf needs (check_parts.h). */
#include "check/check_parts.h"

#include <string.h>

/* Every feature a part needs, space-separated ("a|b": either). */
static const struct {
	const char *part, *needs;
} parts[] = {
    {"trace: polls", "uprobe_multi|uprobe ringbuf task_storage bpf_cookie"},
    {"trace: blocking inside polls", "tp_btf"},
    {"trace: exec and thread exit", "raw_tp"},
    {"trace: cancellation", "uprobe_multi|uprobe"},
    {"trace: --exits uretprobe", "uretprobe"},
    {"profile: samples", "perf_event ringbuf task_storage"},
    {"profile: --off-cpu", "tp_btf"},
};

static bool feature_ok(const struct feature_status *f, size_t n, const char *name, size_t len)
{
	for (size_t i = 0; i < n; i++)
		if (strlen(f[i].name) == len && !strncmp(f[i].name, name, len))
			return f[i].ok;
	return false;
}

/* Does every word of needs hold? The first that does not goes to *missing. */
static bool part_ok(const struct feature_status *f, size_t n, const char *needs, char *missing,
		    size_t len)
{
	for (const char *w = needs; *w;) {
		size_t wn = strcspn(w, " ");
		bool any = false;

		for (const char *a = w; a < w + wn;) {
			size_t k = strcspn(a, "|");

			if (k > (size_t)(w + wn - a))
				k = (size_t)(w + wn - a);
			any |= feature_ok(f, n, a, k);
			a += k + (a[k] == '|');
		}
		if (!any) {
			snprintf(missing, len, "%.*s", (int)wn, w);
			return false;
		}
		w += wn + (w[wn] == ' ');
	}
	return true;
}

void check_parts__print(FILE *out, const struct feature_status *f, size_t n)
{
	char missing[64];

	fprintf(out, "\n%-30s %-12s %s\n", "PART", "STATUS", "NEEDS");
	for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++) {
		bool ok = part_ok(f, n, parts[i].needs, missing, sizeof(missing));

		fprintf(out, "%-30s %-12s %s%s%s\n", parts[i].part, ok ? "ok" : "unavailable",
			parts[i].needs, ok ? "" : ": no ", ok ? "" : missing);
	}
}

void check_parts__json(cJSON *root, const struct feature_status *f, size_t n)
{
	cJSON *arr = cJSON_AddArrayToObject(root, "parts");

	for (size_t i = 0; arr && i < sizeof(parts) / sizeof(parts[0]); i++) {
		cJSON *p = cJSON_CreateObject();
		char miss[64] = "";

		if (!p || !cJSON_AddItemToArray(arr, p))
			break;
		cJSON_AddStringToObject(p, "name", parts[i].part);
		cJSON_AddStringToObject(p, "needs", parts[i].needs);
		cJSON_AddStringToObject(
		    p, "status",
		    part_ok(f, n, parts[i].needs, miss, sizeof(miss)) ? "ok" : "unavailable");
		if (miss[0])
			cJSON_AddStringToObject(p, "missing", miss);
	}
}
