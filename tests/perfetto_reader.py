# SPDX-License-Identifier: GPL-2.0
"""An independent reader of the tracer's Perfetto traces, for the tests.

It shares no code with user/export/perfetto.c: the file is parsed by Python's
protobuf library against tests/data/perfetto_subset.proto (Perfetto's field numbers),
compiled here by protoc, and read with the semantics Perfetto's docs give
trace_processor:

- packets belong to sequences (trusted_packet_sequence_id); a packet with
  SEQ_INCREMENTAL_STATE_CLEARED starts a sequence's state afresh; a packet that uses
  that state (interned names or values, defaults, an incremental clock) must say
  SEQ_NEEDS_INCREMENTAL_STATE, and the state must have been started;
- interned event names, debug annotation names and debug annotation string values
  are per sequence, and an iid is defined before (or in the packet of) its use;
- TracePacketDefaults give a sequence's default timestamp clock and track;
- a sequence-scoped clock (id 64-127) with is_incremental counts each timestamp as a
  delta from the last packet on that clock in the sequence, starting at its
  ClockSnapshot value, and maps to CLOCK_MONOTONIC by that snapshot;
- on each track, events ordered by time (stable), BEGIN opens a slice and END
  closes the innermost open one.

read(path) returns a Trace: tracks, slices (with resolved names and arguments),
instants, and the file size.
"""
import functools
import importlib
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

SCHEMA = Path(__file__).resolve().parent / "data" / "perfetto_subset.proto"
CLEARED, NEEDS_STATE = 1, 2
MONOTONIC, BOOTTIME = 3, 6
BEGIN, END, INSTANT = 1, 2, 3


class TraceError(AssertionError):
    pass


@functools.lru_cache(maxsize=1)
def _module():
    out = Path(tempfile.mkdtemp(prefix="asyncbpf-pb-"))
    subprocess.run(["protoc", f"--proto_path={SCHEMA.parent}", f"--python_out={out}", SCHEMA.name], check=True,
                   capture_output=True, timeout=60)
    sys.path.insert(0, str(out))
    try:
        return importlib.import_module(SCHEMA.stem + "_pb2")
    finally:
        sys.path.remove(str(out))


@dataclass
class Slice:
    track: int
    ts: int
    dur: int
    name: str
    args: dict
    depth: int
    flows: list
    terminating_flows: list
    sequence: int


@dataclass
class Trace:
    size: int
    packets: int
    tracks: dict = field(default_factory=dict)  # uuid -> TrackDescriptor
    slices: list = field(default_factory=list)
    instants: list = field(default_factory=list)  # (ts, track, name, args)

    def track_name(self, uuid):
        d = self.tracks[uuid]
        if d.HasField("thread"):
            return d.thread.thread_name
        if d.HasField("process"):
            return d.process.process_name
        return d.name

    def thread_tracks(self):
        return {u: d for u, d in self.tracks.items() if d.HasField("thread")}


class _Sequence:
    def __init__(self):
        self.started = False
        self.event_names, self.annotation_names, self.strings = {}, {}, {}
        self.default_clock = None
        self.default_track = None
        self.clocks = {}  # id -> [value, monotonic offset, incremental]


def _unknown(msg, where):
    """Fields outside the schema (or with another wire type) anywhere in msg."""
    if msg.UnknownFields() and len(msg.UnknownFields()):
        raise TraceError(f"{where}: fields outside Perfetto's schema: "
                         f"{[f.field_number for f in msg.UnknownFields()]}")
    for desc, value in msg.ListFields():
        if desc.message_type is None:
            continue
        for m in (value if desc.label == desc.LABEL_REPEATED else [value]):
            _unknown(m, f"{where}.{desc.name}")


def read(path):
    pb = _module()
    data = Path(path).read_bytes()
    trace = pb.Trace()
    trace.ParseFromString(data)
    _unknown(trace, "Trace")
    out = Trace(size=len(data), packets=len(trace.packet))
    seqs = {}
    events = {}  # track -> [(ts, order, type, name, args, flows, terminating, seq)]
    primary = None
    for i, p in enumerate(trace.packet):
        where = f"packet {i}"
        if not p.trusted_packet_sequence_id:
            raise TraceError(f"{where}: no trusted_packet_sequence_id")
        sid = p.trusted_packet_sequence_id
        if p.sequence_flags & CLEARED:
            seqs[sid] = _Sequence()
            seqs[sid].started = True
        s = seqs.setdefault(sid, _Sequence())
        uses_state = False

        if p.HasField("clock_snapshot"):
            cs = p.clock_snapshot
            mono = [c.timestamp for c in cs.clocks if c.clock_id == MONOTONIC]
            for c in cs.clocks:
                if 64 <= c.clock_id < 128:
                    if not mono:
                        raise TraceError(f"{where}: sequence clock {c.clock_id} not related to MONOTONIC")
                    s.clocks[c.clock_id] = [c.timestamp, mono[0] - c.timestamp, c.is_incremental]
                elif c.is_incremental:
                    raise TraceError(f"{where}: a global clock cannot be incremental")
            if cs.HasField("primary_trace_clock"):
                primary = cs.primary_trace_clock
        if p.HasField("trace_packet_defaults"):
            d = p.trace_packet_defaults
            if d.HasField("timestamp_clock_id"):
                s.default_clock = d.timestamp_clock_id
            if d.HasField("track_event_defaults") and d.track_event_defaults.HasField("track_uuid"):
                s.default_track = d.track_event_defaults.track_uuid
        if p.HasField("interned_data"):
            if not s.started:
                raise TraceError(f"{where}: interned data on sequence {sid} before its state was cleared")
            idata = p.interned_data
            for table, entries, attr in ((s.event_names, idata.event_names, "name"),
                                         (s.annotation_names, idata.debug_annotation_names, "name"),
                                         (s.strings, idata.debug_annotation_string_values, "str")):
                for e in entries:
                    if e.iid == 0 or e.iid in table:
                        raise TraceError(f"{where}: iid {e.iid} invalid or defined twice on sequence {sid}")
                    v = getattr(e, attr)
                    table[e.iid] = v.decode() if isinstance(v, bytes) else v
        if p.HasField("track_descriptor"):
            d = p.track_descriptor
            if d.HasField("parent_uuid") and d.parent_uuid not in out.tracks:
                raise TraceError(f"{where}: parent track {d.parent_uuid} not declared yet")
            out.tracks[d.uuid] = d

        ts = None
        if p.HasField("timestamp"):
            clock = p.timestamp_clock_id if p.HasField("timestamp_clock_id") else s.default_clock
            if not p.HasField("timestamp_clock_id") and s.default_clock is not None:
                uses_state = True
            if clock is None:
                clock = BOOTTIME
            if clock == MONOTONIC:
                ts = p.timestamp
            elif clock in s.clocks:
                uses_state = True
                c = s.clocks[clock]
                c[0] = c[0] + p.timestamp if c[2] else p.timestamp
                ts = c[0] + c[1]
            else:
                raise TraceError(f"{where}: timestamp on clock {clock}, which this reader cannot place")

        if p.HasField("track_event"):
            ev = p.track_event
            if ts is None:
                raise TraceError(f"{where}: a track event without a timestamp")
            if ev.HasField("track_uuid"):
                track = ev.track_uuid
            elif s.default_track is not None:
                track, uses_state = s.default_track, True
            else:
                raise TraceError(f"{where}: a track event without a track")
            if track not in out.tracks:
                raise TraceError(f"{where}: track {track} used before its descriptor")
            name = None
            if ev.HasField("name_iid"):
                uses_state = True
                if ev.name_iid not in s.event_names:
                    raise TraceError(f"{where}: event name iid {ev.name_iid} undefined on sequence {sid}")
                name = s.event_names[ev.name_iid]
            elif ev.HasField("name"):
                name = ev.name
            args = {}
            for a in ev.debug_annotations:
                if a.HasField("name_iid"):
                    uses_state = True
                    if a.name_iid not in s.annotation_names:
                        raise TraceError(f"{where}: annotation name iid {a.name_iid} undefined")
                    key = s.annotation_names[a.name_iid]
                else:
                    key = a.name
                if a.HasField("string_value_iid"):
                    uses_state = True
                    if a.string_value_iid not in s.strings:
                        raise TraceError(f"{where}: annotation string iid {a.string_value_iid} undefined")
                    args[key] = s.strings[a.string_value_iid]
                elif a.HasField("string_value"):
                    args[key] = a.string_value
                elif a.HasField("pointer_value"):
                    args[key] = a.pointer_value
                elif a.HasField("uint_value"):
                    args[key] = a.uint_value
            events.setdefault(track, []).append((ts, i, ev.type, name, args, list(ev.flow_ids),
                                                 list(ev.terminating_flow_ids), sid))
        if uses_state:
            if not p.sequence_flags & NEEDS_STATE:
                raise TraceError(f"{where}: uses incremental state without SEQ_NEEDS_INCREMENTAL_STATE")
            if not s.started:
                raise TraceError(f"{where}: sequence {sid} used before its state was cleared")
    if primary not in (None, MONOTONIC):
        raise TraceError(f"primary trace clock {primary}: this reader places MONOTONIC only")

    for track, evs in events.items():
        evs.sort(key=lambda e: (e[0], e[1]))
        stack = []
        for ts, _, kind, name, args, flows, term, sid in evs:
            if kind == BEGIN:
                stack.append((ts, name, args, flows, term, sid))
            elif kind == END:
                if not stack:
                    raise TraceError(f"track {track}: END at {ts} without an open slice")
                b = stack.pop()
                out.slices.append(Slice(track, b[0], ts - b[0], b[1], b[2], len(stack), b[3], b[4], b[5]))
            elif kind == INSTANT:
                out.instants.append((ts, track, name, args))
        if stack:
            raise TraceError(f"track {track}: {len(stack)} slices never end")
    out.slices.sort(key=lambda x: (x.ts, x.depth))
    return out
