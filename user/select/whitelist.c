// SPDX-License-Identifier: GPL-2.0
/*
 * Whitelist files (docs/selection.md): written as JSON with one entry per candidate
 * future and a "trace" flag the user edits, read back into a selection.
 *
 * Whitelists are hand-edited and may come from anywhere, so the reader bounds the file
 * size, validates every entry before it changes the selection, and says which entry
 * and which field is wrong.
 */
#include "select/selection.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "analyze/crate.h"
#include "select/selection_internal.h"

#define WHITELIST_VERSION   1
#define WHITELIST_MAX_BYTES (64u << 20)

/* ---------------------------------------------------------------------------------- */
/* Whitelist: write                                                                   */

static const char *future_crate(const struct future *f, char *buf, size_t len)
{
	if (f->crate)
		return f->crate;
	rust_path__crate(f->path, buf, len);
	return buf;
}

static int compare_by_crate_path(const void *pa, const void *pb, void *arg)
{
	const struct model *m = arg;
	const struct future *a = &m->futures[*(const uint32_t *)pa];
	const struct future *b = &m->futures[*(const uint32_t *)pb];
	char ca[256], cb[256];
	int c;

	c = strcmp(future_crate(a, ca, sizeof(ca)), future_crate(b, cb, sizeof(cb)));
	if (!c)
		c = strcmp(a->path, b->path);
	if (!c) /* identical paths: keep model order, so output is stable */
		c = *(const uint32_t *)pa < *(const uint32_t *)pb ? -1 : 1;
	return c;
}

static void json_key_string(FILE *out, const char *key, const char *value)
{
	fprintf(out, ", \"%s\": ", key);
	json__write_string(out, value);
}

/*
 * One future per line, "trace" first: a reviewer sees every decision in one column,
 * a diff shows exactly the entries that changed, and sed/grep can edit the file.
 */
static void write_entry(FILE *out, const struct model *m, uint32_t idx, int32_t any_poll,
			bool trace, char *name, size_t name_len)
{
	const struct future *f = &m->futures[idx];
	const struct poll_fn *p = NULL;
	char crate[256];

	if (f->poll >= 0 && (uint32_t)f->poll < m->nr_polls)
		p = &m->polls[f->poll];
	else if (any_poll >= 0)
		p = &m->polls[any_poll];
	future__display_name(f, name, name_len);
	fprintf(out, "    {\"trace\": %s, \"future\": ", trace ? "true" : "false");
	json__write_string(out, f->path);
	json_key_string(out, "name", name);
	json_key_string(out, "crate", future_crate(f, crate, sizeof(crate)));
	json_key_string(out, "class", crate_class__name(f->crate_class));
	json_key_string(out, "kind", future_kind__name(f->kind));
	fprintf(out, ", \"traceable\": %s",
		f->poll >= 0 && (uint32_t)f->poll < m->nr_polls ? "true" : "false");
	fprintf(out, ", \"inlined_only\": %s", f->inlined_only ? "true" : "false");
	json_key_string(out, "poll", p ? p->name : NULL);
	json_key_string(out, "linkage_name", p ? p->linkage_name : NULL);
	json_key_string(out, "file", f->file);
	if (f->file && f->line)
		fprintf(out, ", \"line\": %" PRIu32 "}", f->line);
	else
		fputs(", \"line\": null}", out);
}

int whitelist__write(const struct model *m, const struct selection *s, bool all_crates, FILE *out)
{
	uint32_t nr = sel_nr(s, m), nr_out = 0;
	uint32_t *order = NULL;
	int32_t *any_poll = NULL;
	char *name = NULL;
	size_t name_len = 0;
	int err = 0;

	if (m->nr_futures) {
		order = malloc(m->nr_futures * sizeof(*order));
		any_poll = malloc(m->nr_futures * sizeof(*any_poll));
		if (!order || !any_poll) {
			err = -ENOMEM;
			goto out;
		}
	}
	for (uint32_t i = 0; i < m->nr_futures; i++) {
		const struct future *f = &m->futures[i];
		bool selected = i < nr && s->futures[i];

		any_poll[i] = -1;
		if (!f->path) /* nothing to match it by when read back */
			continue;
		if (selected || all_crates || f->crate_class == CRATE_USER)
			order[nr_out++] = i;
		if (strlen(f->path) + 64 > name_len)
			name_len = strlen(f->path) + 64;
	}
	/* a name for futures whose polls are all inlined: the first poll fn we know */
	for (uint32_t i = 0; i < m->nr_polls; i++) {
		int32_t fi = m->polls[i].future;
		if (fi >= 0 && (uint32_t)fi < m->nr_futures && any_poll[fi] < 0)
			any_poll[fi] = (int32_t)i;
	}
	if (nr_out)
		qsort_r(order, nr_out, sizeof(*order), compare_by_crate_path, (void *)m);
	if (name_len) {
		name = malloc(name_len);
		if (!name) {
			err = -ENOMEM;
			goto out;
		}
	}

	fprintf(out, "{\n  \"asyncbpf_whitelist\": %d,\n  \"binary\": ", WHITELIST_VERSION);
	json__write_string(out, m->path);
	fputs(",\n  \"build_id\": ", out);
	json__write_string(out, m->build_id);
	fputs(",\n  \"help\": \"Set \\\"trace\\\" to true or false per future, then pass this "
	      "file back with --whitelist. Entries match by \\\"future\\\" path.\",\n",
	      out);
	fputs("  \"futures\": [", out);
	for (uint32_t k = 0; k < nr_out; k++) {
		uint32_t i = order[k];
		fputs(k ? ",\n" : "\n", out);
		write_entry(out, m, i, any_poll[i], i < nr && s->futures[i], name, name_len);
	}
	fputs(nr_out ? "\n  ]\n}\n" : "]\n}\n", out);
	if (fflush(out) || ferror(out))
		err = -EIO;
out:
	free(name);
	free(any_poll);
	free(order);
	return err;
}

/* ---------------------------------------------------------------------------------- */
/* Whitelist: read                                                                    */

static void set_err(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void set_err(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (!err || !errlen)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

/* The whole file, NUL-terminated, refusing anything past WHITELIST_MAX_BYTES. */
static int read_bounded(const char *path, char **data, size_t *len, char *err, size_t errlen)
{
	FILE *f = fopen(path, "rb");
	struct stat st;
	char *buf = NULL;
	size_t used = 0, cap = 0;
	int ret = 0;

	*data = NULL;
	*len = 0;
	if (!f) {
		ret = -errno;
		set_err(err, errlen, "whitelist '%s': cannot open: %s", path, strerror(-ret));
		return ret;
	}
	if (fstat(fileno(f), &st) == 0 && S_ISREG(st.st_mode) &&
	    (uint64_t)st.st_size > WHITELIST_MAX_BYTES)
		goto too_big;
	for (;;) {
		if (cap - used < 65536 + 1) {
			size_t ncap = cap ? cap * 2 : 65536 + 1;
			if (ncap > WHITELIST_MAX_BYTES + 2)
				ncap = WHITELIST_MAX_BYTES + 2;
			char *n = realloc(buf, ncap);
			if (!n) {
				ret = -ENOMEM;
				set_err(err, errlen, "whitelist '%s': out of memory", path);
				goto out;
			}
			buf = n;
			cap = ncap;
		}
		size_t want = cap - used - 1;
		size_t got = fread(buf + used, 1, want, f);
		used += got;
		if (used > WHITELIST_MAX_BYTES)
			goto too_big;
		if (got < want) {
			if (ferror(f)) {
				ret = errno ? -errno : -EIO;
				set_err(err, errlen, "whitelist '%s': cannot read: %s", path,
					strerror(-ret));
				goto out;
			}
			break; /* EOF */
		}
	}
	buf[used] = '\0';
	*data = buf;
	*len = used;
	buf = NULL;
	goto out;
too_big:
	ret = -EFBIG;
	set_err(err, errlen,
		"whitelist '%s': larger than %u MiB: not a whitelist written by asyncbpf?", path,
		WHITELIST_MAX_BYTES >> 20);
out:
	free(buf);
	fclose(f);
	return ret;
}

static void line_col(const char *data, const char *at, unsigned *line, unsigned *col)
{
	*line = 1;
	*col = 1;
	for (const char *p = data; p < at && *p; p++) {
		if (*p == '\n') {
			(*line)++;
			*col = 1;
		} else {
			(*col)++;
		}
	}
}

/* Sorted indices, for exact lookups by string in O(log n). */
struct name_index {
	uint32_t *idx;
	uint32_t nr;
};

static int compare_future_path(const void *pa, const void *pb, void *arg)
{
	const struct model *m = arg;
	return strcmp(m->futures[*(const uint32_t *)pa].path,
		      m->futures[*(const uint32_t *)pb].path);
}

static int compare_poll_linkage(const void *pa, const void *pb, void *arg)
{
	const struct model *m = arg;
	return strcmp(m->polls[*(const uint32_t *)pa].linkage_name,
		      m->polls[*(const uint32_t *)pb].linkage_name);
}

/* First position whose key is >= s. */
static uint32_t lower_bound(const struct name_index *ix, const struct model *m, bool polls,
			    const char *s)
{
	uint32_t lo = 0, hi = ix->nr;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		const char *key =
		    polls ? m->polls[ix->idx[mid]].linkage_name : m->futures[ix->idx[mid]].path;
		if (strcmp(key, s) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/*
 * Select every future the entry names: all futures with this exact path (a model may
 * hold one path more than once), else the future of the poll fn with this linkage
 * name. Returns how many futures it matched.
 */
static uint32_t apply_entry(struct selection *s, const struct model *m, uint32_t nr,
			    const struct name_index *by_path, const struct name_index *by_linkage,
			    const char *path, const char *linkage_name, bool trace)
{
	uint32_t n = 0;

	for (uint32_t k = lower_bound(by_path, m, false, path);
	     k < by_path->nr && !strcmp(m->futures[by_path->idx[k]].path, path); k++) {
		if (trace)
			s->futures[by_path->idx[k]] = true;
		n++;
	}
	if (n || !linkage_name)
		return n;
	for (uint32_t k = lower_bound(by_linkage, m, true, linkage_name);
	     k < by_linkage->nr && !strcmp(m->polls[by_linkage->idx[k]].linkage_name, linkage_name);
	     k++) {
		int32_t fi = m->polls[by_linkage->idx[k]].future;
		if (fi < 0 || (uint32_t)fi >= nr)
			continue;
		if (trace)
			s->futures[fi] = true;
		n++;
	}
	return n;
}

/* data[len] as an asyncbpf whitelist object of the version we read; *futures its list. */
static int parse_document(const char *path, const char *data, size_t len, cJSON **root,
			  const cJSON **futures, char *err, size_t errlen)
{
	const char *parse_end = NULL;
	const cJSON *version;

	if (memchr(data, '\0', len)) {
		set_err(err, errlen, "whitelist '%s': contains a NUL byte: not a JSON text", path);
		return -EINVAL;
	}
	/* len + 1: the terminator is part of the buffer, so trailing garbage is refused */
	*root = cJSON_ParseWithLengthOpts(data, len + 1, &parse_end, 1);
	if (!*root) {
		unsigned line, col;
		line_col(data, parse_end ? parse_end : data, &line, &col);
		set_err(err, errlen, "whitelist '%s': not valid JSON at line %u, column %u", path,
			line, col);
		return -EINVAL;
	}
	if (!cJSON_IsObject(*root)) {
		set_err(err, errlen, "whitelist '%s': the top level must be a JSON object", path);
		return -EINVAL;
	}
	version = cJSON_GetObjectItemCaseSensitive(*root, "asyncbpf_whitelist");
	if (!version) {
		set_err(err, errlen,
			"whitelist '%s': no \"asyncbpf_whitelist\" key: not an asyncbpf whitelist "
			"(write one with 'asyncbpf list BIN -o FILE')",
			path);
		return -EINVAL;
	}
	if (!cJSON_IsNumber(version) || version->valuedouble != WHITELIST_VERSION) {
		char *v = cJSON_PrintUnformatted(version);
		set_err(err, errlen,
			"whitelist '%s': \"asyncbpf_whitelist\" is %.32s, this asyncbpf reads "
			"version %d",
			path, v ? v : "?", WHITELIST_VERSION);
		free(v);
		return -EINVAL;
	}
	*futures = cJSON_GetObjectItemCaseSensitive(*root, "futures");
	if (!cJSON_IsArray(*futures)) {
		set_err(err, errlen, "whitelist '%s': \"futures\" %s", path,
			*futures ? "must be an array" : "is missing");
		return -EINVAL;
	}
	return 0;
}

/* Every entry well formed, before the selection changes: a bad file changes nothing. */
static int validate_entries(const char *path, const cJSON *futures, char *err, size_t errlen)
{
	const cJSON *entry;
	int i = 0;

	cJSON_ArrayForEach(entry, futures)
	{
		const cJSON *future = cJSON_GetObjectItemCaseSensitive(entry, "future");
		const cJSON *trace = cJSON_GetObjectItemCaseSensitive(entry, "trace");
		const cJSON *linkage = cJSON_GetObjectItemCaseSensitive(entry, "linkage_name");
		const char *what = NULL;

		if (!cJSON_IsObject(entry))
			what = "must be an object";
		else if (!future)
			what = "has no \"future\"";
		else if (!cJSON_IsString(future))
			what = "\"future\" must be a string";
		else if (!trace)
			what = "has no \"trace\"";
		else if (!cJSON_IsBool(trace))
			what = "\"trace\" must be true or false";
		else if (linkage && !cJSON_IsString(linkage) && !cJSON_IsNull(linkage))
			what = "\"linkage_name\" must be a string or null";
		if (what) {
			if (future && cJSON_IsString(future))
				set_err(err, errlen, "whitelist '%s': futures[%d] ('%.200s') %s",
					path, i, future->valuestring, what);
			else
				set_err(err, errlen, "whitelist '%s': futures[%d] %s", path, i,
					what);
			return -EINVAL;
		}
		i++;
	}
	return 0;
}

/* The futures of the first nr by path, the poll fns by linkage name, sorted. */
static int build_indexes(const struct model *m, uint32_t nr, struct name_index *by_path,
			 struct name_index *by_linkage)
{
	if (!nr)
		return 0;
	by_path->idx = malloc(nr * sizeof(*by_path->idx));
	by_linkage->idx = malloc((m->nr_polls ? m->nr_polls : 1) * sizeof(*by_linkage->idx));
	if (!by_path->idx || !by_linkage->idx)
		return -ENOMEM;
	for (uint32_t k = 0; k < nr; k++)
		if (m->futures[k].path)
			by_path->idx[by_path->nr++] = k;
	for (uint32_t k = 0; k < m->nr_polls; k++)
		if (m->polls[k].linkage_name)
			by_linkage->idx[by_linkage->nr++] = k;
	if (by_path->nr)
		qsort_r(by_path->idx, by_path->nr, sizeof(uint32_t), compare_future_path,
			(void *)m);
	if (by_linkage->nr)
		qsort_r(by_linkage->idx, by_linkage->nr, sizeof(uint32_t), compare_poll_linkage,
			(void *)m);
	return 0;
}

/* Apply every (validated) entry; the number naming no future of this binary. */
static uint32_t apply_entries(struct selection *s, const struct model *m, uint32_t nr,
			      const struct name_index *by_path, const struct name_index *by_linkage,
			      const char *path, const cJSON *futures, char *err, size_t errlen)
{
	const cJSON *entry;
	uint32_t unknown = 0;
	int i = 0;

	cJSON_ArrayForEach(entry, futures)
	{
		const char *future = cJSON_GetObjectItemCaseSensitive(entry, "future")->valuestring;
		const cJSON *linkage = cJSON_GetObjectItemCaseSensitive(entry, "linkage_name");
		bool trace = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(entry, "trace"));

		if (!apply_entry(s, m, nr, by_path, by_linkage, future,
				 cJSON_IsString(linkage) ? linkage->valuestring : NULL, trace)) {
			if (!unknown++)
				set_err(err, errlen,
					"whitelist '%s': futures[%d] '%.300s' is not a future of "
					"this binary (renamed, or a different build?)",
					path, i, future);
		}
		i++;
	}
	return unknown;
}

int whitelist__read(struct selection *s, const struct model *m, const char *path,
		    uint32_t *nr_unknown, char *err, size_t errlen)
{
	uint32_t nr = sel_nr(s, m), unknown;
	struct name_index by_path = {0}, by_linkage = {0};
	const cJSON *futures = NULL;
	cJSON *root = NULL;
	char *data = NULL;
	size_t len;
	int ret;

	if (nr_unknown)
		*nr_unknown = 0;
	set_err(err, errlen, "%s", "");
	ret = read_bounded(path, &data, &len, err, errlen);
	if (ret)
		return ret;
	ret = parse_document(path, data, len, &root, &futures, err, errlen);
	if (!ret)
		ret = validate_entries(path, futures, err, errlen);
	if (!ret && (ret = build_indexes(m, nr, &by_path, &by_linkage)))
		set_err(err, errlen, "whitelist '%s': out of memory", path);
	if (!ret) {
		unknown =
		    apply_entries(s, m, nr, &by_path, &by_linkage, path, futures, err, errlen);
		if (nr_unknown)
			*nr_unknown = unknown;
	}
	free(by_path.idx);
	free(by_linkage.idx);
	cJSON_Delete(root);
	free(data);
	return ret;
}
