/* SPDX-License-Identifier: GPL-2.0 */
/*
 * One page served over HTTP (top --prometheus: GET /metrics), by libmicrohttpd's own
 * thread: the caller publishes a new page when it has one, a request gets a copy of
 * the latest. Requests never wait for the caller, and the caller never waits for a
 * client: a slow or hostile one (slowloris, a huge request, many connections) meets
 * the limits below and is closed, whatever it does.
 */
#ifndef ASYNCBPF_LIB_HTTP_PAGE_H
#define ASYNCBPF_LIB_HTTP_PAGE_H

#include <stddef.h>
#include <stdint.h>

#define HTTP_PAGE_CONNECTIONS 32   /* at once; more are closed at accept */
#define HTTP_PAGE_TIMEOUT_S   10   /* an idle or slow connection is closed after this */
#define HTTP_PAGE_REQUEST_MAX 8192 /* bytes of a request's headers; a larger one: 431 */

struct http_page;

/*
 * Listen on spec: "PORT" or ":PORT" (127.0.0.1), "ADDR:PORT", "[ADDR6]:PORT"
 * (numeric addresses, or localhost); PORT 0 picks a free one. path: the page's URL
 * path ("/metrics"). 0, or -EINVAL (a bad spec) / -errno (could not listen), with
 * why in err.
 */
int http_page__start(const char *spec, const char *path, const char *content_type,
		     struct http_page **out, char *err, size_t err_len);
/* The page's URL: "http://127.0.0.1:9464/metrics". */
const char *http_page__url(const struct http_page *h);
/* Serve page (len bytes, malloc'd: taken over, freed here) from now on. */
void http_page__publish(struct http_page *h, char *page, size_t len);
/* Requests answered with the page so far. */
uint64_t http_page__served(const struct http_page *h);
void http_page__stop(struct http_page *h);

#endif
