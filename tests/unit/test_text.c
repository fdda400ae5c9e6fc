// SPDX-License-Identifier: GPL-2.0
/* Text helpers (user/lib/text.c): Rust type paths short enough for a table. */
#include "lib/text.h"
#include "testlib.h"

static void test_abbreviate(void)
{
	static const char svc[] =
	    "hyper::server::server::new_svc::NewSvcTask<hyper::server::tcp::addr_stream::"
	    "AddrStream, hyper_server::server::{async_fn#0}::{closure#0}::{async_block_env#0}, "
	    "hyper::service::util::ServiceFn<hyper_server::server::{async_fn#0}::{closure#0}::"
	    "{async_block#0}::{closure_env#0}, hyper::body::body::Body>, hyper::common::exec::"
	    "Exec, hyper::server::server::NoopWatcher>";
	char out[256];

	rust__abbreviate("demo::middle", out, sizeof(out), 80);
	CHECK_STR(out, "demo::middle"); /* fits: as it is */
	rust__abbreviate(svc, out, sizeof(out), 130);
	/* the paths inside the arguments cut to their last segment */
	CHECK_STR(out,
		  "hyper::server::server::new_svc::NewSvcTask<AddrStream, {async_block_env#0}, "
		  "ServiceFn<{closure_env#0}, Body>, Exec, NoopWatcher>");
	rust__abbreviate(svc, out, sizeof(out), 120);
	/* then the arguments' arguments elided */
	CHECK_STR(out,
		  "hyper::server::server::new_svc::NewSvcTask<AddrStream, {async_block_env#0}, "
		  "ServiceFn<\xe2\x80\xa6>, Exec, NoopWatcher>");
	rust__abbreviate(svc, out, sizeof(out), 80);
	/* then every argument */
	CHECK_STR(out, "hyper::server::server::new_svc::NewSvcTask<\xe2\x80\xa6>");
	rust__abbreviate(svc, out, sizeof(out), 20);
	CHECK_STR(out, "hyper::server::se\xe2\x80\xa6");
	CHECK(strlen(out) <= 20);
	rust__abbreviate(svc, out, 16, 200); /* max past the buffer: bounded by it */
	CHECK(strlen(out) < 16);
}

int main(void)
{
	test_abbreviate();
	TEST_MAIN_END();
}
