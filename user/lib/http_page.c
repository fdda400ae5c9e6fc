// SPDX-License-Identifier: GPL-2.0
/*
 * One page over HTTP with libmicrohttpd (http_page.h): its internal thread (epoll)
 * accepts and answers; the page is swapped under a mutex and copied into each
 * response, so neither side waits on the other for longer than a copy.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "lib/http_page.h"

struct http_page {
	struct MHD_Daemon *d;
	pthread_mutex_t lock;
	char *page; /* the latest, NULL before the first */
	size_t len;
	uint64_t served;
	char path[128], type[128], url[256];
};

/* "PORT", ":PORT", "ADDR:PORT", "[ADDR6]:PORT" into ss; 0 or -EINVAL */
static int parse_spec(const char *spec, struct sockaddr_storage *ss, socklen_t *sl, char *err,
		      size_t err_len)
{
	char host[64] = "127.0.0.1";
	const char *port = spec, *colon = strrchr(spec, ':');
	struct sockaddr_in *v4 = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)ss;
	char *end;
	unsigned long p;

	if (colon) {
		size_t n = (size_t)(colon - spec);

		port = colon + 1;
		if (n && spec[0] == '[') {
			if (n < 2 || spec[n - 1] != ']' || n - 2 >= sizeof(host))
				goto bad;
			memcpy(host, spec + 1, n - 2);
			host[n - 2] = '\0';
		} else if (n) {
			if (n >= sizeof(host) || memchr(spec, ':', n))
				goto bad; /* an IPv6 address wants brackets */
			memcpy(host, spec, n);
			host[n] = '\0';
		}
	}
	errno = 0;
	p = strtoul(port, &end, 10);
	if (!*port || *end || errno || p > 65535)
		goto bad;
	if (!strcmp(host, "localhost"))
		strcpy(host, "127.0.0.1");
	memset(ss, 0, sizeof(*ss));
	if (inet_pton(AF_INET, host, &v4->sin_addr) == 1) {
		v4->sin_family = AF_INET;
		v4->sin_port = htons((uint16_t)p);
		*sl = sizeof(*v4);
		return 0;
	}
	if (inet_pton(AF_INET6, host, &v6->sin6_addr) == 1) {
		v6->sin6_family = AF_INET6;
		v6->sin6_port = htons((uint16_t)p);
		*sl = sizeof(*v6);
		return 0;
	}
bad:
	snprintf(err, err_len,
		 "'%s' is not PORT, ADDR:PORT or [ADDR6]:PORT with a numeric address (or "
		 "localhost) and a port 0-65535",
		 spec);
	return -EINVAL;
}

static enum MHD_Result reply(struct MHD_Connection *c, unsigned status, const char *type,
			     const void *body, size_t len)
{
	struct MHD_Response *r =
	    MHD_create_response_from_buffer(len, (void *)body, MHD_RESPMEM_MUST_COPY);
	enum MHD_Result ok;

	if (!r)
		return MHD_NO; /* out of memory: the connection is closed */
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
		MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
	if (status == MHD_HTTP_SERVICE_UNAVAILABLE)
		MHD_add_response_header(r, MHD_HTTP_HEADER_RETRY_AFTER, "1");
	ok = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return ok;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
				  const char *method, const char *version, const char *upload_data,
				  size_t *upload_data_size, void **con_cls)
{
	static const char text[] = "text/plain; charset=utf-8";
	struct http_page *h = cls;
	static int has_body, no_body; /* *con_cls: what the headers said */
	enum MHD_Result ok;

	(void)version;
	(void)upload_data;
	if (!*con_cls) { /* the headers: answer once the request is in */
		const char *cl =
		    MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
		static const char big[] = "no request body is read here\n";

		*con_cls = cl && strcmp(cl, "0") ? (void *)&has_body : (void *)&no_body;
		/* a large or unbounded body is not read: refused now (the client may see
		 * the connection reset, its data unread); a small one is read and dropped,
		 * then refused below */
		if ((cl && strtoull(cl, NULL, 10) > HTTP_PAGE_REQUEST_MAX) ||
		    MHD_lookup_connection_value(c, MHD_HEADER_KIND,
						MHD_HTTP_HEADER_TRANSFER_ENCODING))
			return reply(c, MHD_HTTP_CONTENT_TOO_LARGE, text, big, sizeof(big) - 1);
		return MHD_YES;
	}
	if (*upload_data_size) { /* a small body: dropped */
		*upload_data_size = 0;
		return MHD_YES;
	}
	if (strcmp(method, "GET") && strcmp(method, "HEAD")) {
		static const char msg[] = "only GET and HEAD\n";

		return reply(c, MHD_HTTP_METHOD_NOT_ALLOWED, text, msg, sizeof(msg) - 1);
	}
	if (*con_cls == &has_body) {
		static const char msg[] = "a GET takes no body\n";

		return reply(c, MHD_HTTP_BAD_REQUEST, text, msg, sizeof(msg) - 1);
	}
	if (strcmp(url, h->path)) {
		char msg[256];
		int n = snprintf(msg, sizeof(msg), "not found: the metrics are at %s\n", h->path);

		return reply(c, MHD_HTTP_NOT_FOUND, text, msg, (size_t)n);
	}
	pthread_mutex_lock(&h->lock);
	if (h->page) {
		ok = reply(c, MHD_HTTP_OK, h->type, h->page, h->len);
		h->served++;
	} else {
		static const char msg[] = "no statistics yet: the probes are being attached\n";

		ok = reply(c, MHD_HTTP_SERVICE_UNAVAILABLE, text, msg, sizeof(msg) - 1);
	}
	pthread_mutex_unlock(&h->lock);
	return ok;
}

int http_page__start(const char *spec, const char *path, const char *content_type,
		     struct http_page **out, char *err, size_t err_len)
{
	struct sockaddr_storage ss;
	socklen_t sl = 0; /* parse_spec's, unused: MHD takes the family's size */
	struct http_page *h;
	const union MHD_DaemonInfo *info;
	char host[INET6_ADDRSTRLEN] = "";
	unsigned flags = MHD_USE_EPOLL_INTERNAL_THREAD;
	int r;

	*out = NULL;
	if ((r = parse_spec(spec, &ss, &sl, err, err_len)))
		return r;
	if (!(h = calloc(1, sizeof(*h))))
		return -ENOMEM;
	pthread_mutex_init(&h->lock, NULL);
	snprintf(h->path, sizeof(h->path), "%s", path);
	snprintf(h->type, sizeof(h->type), "%s", content_type);
	if (ss.ss_family == AF_INET6)
		flags |= MHD_USE_IPv6;
	errno = 0;
	h->d = MHD_start_daemon(flags, 0, NULL, NULL, on_request, h, MHD_OPTION_SOCK_ADDR,
				(struct sockaddr *)&ss, MHD_OPTION_CONNECTION_LIMIT,
				(unsigned)HTTP_PAGE_CONNECTIONS, MHD_OPTION_CONNECTION_TIMEOUT,
				(unsigned)HTTP_PAGE_TIMEOUT_S, MHD_OPTION_CONNECTION_MEMORY_LIMIT,
				(size_t)HTTP_PAGE_REQUEST_MAX, MHD_OPTION_END);
	if (!h->d) {
		/* MHD says nothing of why; errno is a hint at most, never a usage error */
		r = errno && errno != EINVAL ? -errno : -EADDRNOTAVAIL;
		snprintf(err, err_len, "cannot listen on %s: %s", spec, strerror(-r));
		pthread_mutex_destroy(&h->lock);
		free(h);
		return r;
	}
	info = MHD_get_daemon_info(h->d, MHD_DAEMON_INFO_BIND_PORT);
	if (ss.ss_family == AF_INET6)
		inet_ntop(AF_INET6, &((struct sockaddr_in6 *)&ss)->sin6_addr, host, sizeof(host));
	else
		inet_ntop(AF_INET, &((struct sockaddr_in *)&ss)->sin_addr, host, sizeof(host));
	snprintf(h->url, sizeof(h->url), "http://%s%s%s:%u%s", ss.ss_family == AF_INET6 ? "[" : "",
		 host, ss.ss_family == AF_INET6 ? "]" : "", info ? (unsigned)info->port : 0u,
		 h->path);
	(void)sl;
	*out = h;
	return 0;
}

const char *http_page__url(const struct http_page *h)
{
	return h->url;
}

void http_page__publish(struct http_page *h, char *page, size_t len)
{
	char *old;

	pthread_mutex_lock(&h->lock);
	old = h->page;
	h->page = page;
	h->len = len;
	pthread_mutex_unlock(&h->lock);
	free(old);
}

uint64_t http_page__served(const struct http_page *h)
{
	uint64_t n;

	pthread_mutex_lock((pthread_mutex_t *)&h->lock);
	n = h->served;
	pthread_mutex_unlock((pthread_mutex_t *)&h->lock);
	return n;
}

void http_page__stop(struct http_page *h)
{
	if (!h)
		return;
	MHD_stop_daemon(h->d);
	pthread_mutex_destroy(&h->lock);
	free(h->page);
	free(h);
}
