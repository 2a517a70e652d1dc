//! One HTTP/2 client connection's protocol state, kept by libnghttp2 (the library h2load
//! runs): frames, HPACK, stream states and flow control. Bytes go in and out through memory
//! (`receive`, `take_output`); the worker owns the socket. What the library reports through
//! its callbacks is written into an `Inbox` as plain data (a response's status and byte
//! count, a stream's end), which the worker reads after each call: no callback reaches
//! the worker, and every pointer handed to the library lives as long as the session.

use super::request::StreamRequest;
use crate::config::Http2Settings;
use libnghttp2_sys as ng;
use std::ffi::{CStr, c_int, c_void};
use std::ptr::{self, NonNull};
use std::rc::Rc;

/// A run's requests with their header fields laid out as the library reads them, once for
/// the run. The library is told not to copy the names and values (NO_COPY): they live as
/// long as every session, each of which holds this.
pub(crate) struct Requests {
    requests: Vec<StreamRequest>,
    fields: Vec<Vec<ng::nghttp2_nv>>,
}

impl Requests {
    pub fn new(requests: Vec<StreamRequest>) -> Rc<Requests> {
        let flags = (ng::NGHTTP2_NV_FLAG_NO_COPY_NAME | ng::NGHTTP2_NV_FLAG_NO_COPY_VALUE) as u8;
        let fields = requests
            .iter()
            .map(|request| {
                // Names are lower-case already, as NO_COPY_NAME requires.
                (request.fields.iter())
                    .map(|(name, value)| ng::nghttp2_nv {
                        name: name.as_ptr().cast_mut(),
                        value: value.as_ptr().cast_mut(),
                        namelen: name.len(),
                        valuelen: value.len(),
                        flags,
                    })
                    .collect()
            })
            .collect();
        // The byte vectors the pointers point into are never changed or dropped before this is.
        Rc::new(Requests { requests, fields })
    }
}

/// A request slot's response as far as it came.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Progress {
    pub status: u16,
    pub grpc_status: Option<u16>,
    pub body_bytes: u64,
    /// The server's END_STREAM arrived: the response is complete.
    pub ended: bool,
}

/// What happened to a stream, for the worker to act on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum StreamEvent {
    /// The response is complete (its `Progress` says what came).
    Ended { slot: usize },
    /// The stream ended without a complete response: reset by the server (its error code),
    /// or closed with the session.
    Failed { slot: usize, error_code: u32 },
    /// The server did not process the request: it never left (a GOAWAY came while it
    /// waited for the server's stream limit), or the server's GOAWAY named an earlier stream
    /// as the last it would answer (RFC 9113 6.8). It is as good as new on another connection.
    Unprocessed { slot: usize },
}

/// Why a request could not be given to the session.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum SubmitError {
    /// The server sent GOAWAY, or stream ids ran out: a new connection must carry it.
    NoNewStreams,
    Other(String),
}

/// What the callbacks write; owned by the session, boxed so its address is stable.
struct Inbox {
    progress: Vec<Progress>,
    /// Per slot, the request body being sent and how much of it the library took.
    bodies: Vec<(bytes::Bytes, usize)>,
    /// Per slot, the stream id of its last request: a HEADERS never sent has no stream
    /// object to carry the slot.
    stream_ids: Vec<u32>,
    events: Vec<StreamEvent>,
    /// The first `server` header, kept while `want_server`.
    want_server: bool,
    server: Option<String>,
    /// The error code of a GOAWAY the server sent, and the last stream it said it would answer.
    goaway: Option<(u32, u32)>,
    /// The error code of the GOAWAY the library sent, on a protocol error of the server's.
    sent_goaway: Option<u32>,
}

pub(crate) struct Session {
    raw: NonNull<ng::nghttp2_session>,
    /// The callbacks' `user_data`: owned here (from `Box::into_raw`, freed in `Drop`), and
    /// reached only through raw-pointer provenance, never through a `Box` the library's
    /// writes would alias. See [`Session::inbox`].
    inbox: NonNull<Inbox>,
    /// Dropped after the library's session (`Drop`), which may hold pointers into it.
    requests: Rc<Requests>,
}

/// A slot as a stream's user data: its index plus one, so that no slot is a null pointer
/// (the library's "no data").
fn slot_pointer(slot: usize) -> *mut c_void {
    (slot + 1) as *mut c_void
}

/// The slot a stream carries, while the slot still waits for that stream (not after it gave
/// up on it and moved on to another request).
unsafe fn stream_slot(session: *mut ng::nghttp2_session, inbox: &Inbox, stream_id: i32) -> Option<usize> {
    let data = unsafe { ng::nghttp2_session_get_stream_user_data(session, stream_id) } as usize;
    let slot = data.checked_sub(1)?;
    (inbox.stream_ids.get(slot) == Some(&(stream_id as u32))).then_some(slot)
}

/// The inbox behind a callback's `user_data`.
///
/// SAFETY (for every callback below): `user_data` is the session's boxed `Inbox`, which lives
/// as long as the session; the library calls back only from inside our own calls on the
/// session, on this thread, while no other reference to the inbox is in use. The pointers it
/// passes (frame, name, value) are valid for the duration of the callback.
unsafe fn inbox<'a>(user_data: *mut c_void) -> &'a mut Inbox {
    unsafe { &mut *user_data.cast::<Inbox>() }
}

fn parse_u16(value: &[u8]) -> Option<u16> {
    std::str::from_utf8(value).ok()?.parse().ok()
}

unsafe extern "C" fn on_header(
    session: *mut ng::nghttp2_session,
    frame: *const ng::nghttp2_frame,
    name: *const u8,
    name_len: usize,
    value: *const u8,
    value_len: usize,
    _flags: u8,
    user_data: *mut c_void,
) -> c_int {
    let (inbox, header) = unsafe { (inbox(user_data), (*frame).hd) };
    let name = unsafe { std::slice::from_raw_parts(name, name_len) };
    // The name first: most fields are none of ours, and finding the stream's slot costs a
    // lookup in the library's stream map.
    let wanted = matches!(name, b":status" | b"grpc-status")
        || (name == b"server" && inbox.want_server && inbox.server.is_none());
    if !wanted || u32::from(header.type_) != ng::NGHTTP2_HEADERS {
        return 0;
    }
    let Some(slot) = (unsafe { stream_slot(session, inbox, header.stream_id) }) else { return 0 };
    let value = unsafe { std::slice::from_raw_parts(value, value_len) };
    let progress = &mut inbox.progress[slot];
    match name {
        b":status" => progress.status = parse_u16(value).unwrap_or(0),
        // In the response's HEADERS or its trailers; the trailers' comes last and stands.
        b"grpc-status" => progress.grpc_status = parse_u16(value).or(progress.grpc_status),
        _ => {
            inbox.server = std::str::from_utf8(value)
                .ok()
                .filter(|v| v.bytes().all(|b| b.is_ascii_graphic() || b == b' '))
                .map(str::to_string);
        }
    }
    0
}

unsafe extern "C" fn on_data_chunk(
    session: *mut ng::nghttp2_session,
    _flags: u8,
    stream_id: i32,
    _data: *const u8,
    len: usize,
    user_data: *mut c_void,
) -> c_int {
    let inbox = unsafe { inbox(user_data) };
    if let Some(slot) = unsafe { stream_slot(session, inbox, stream_id) } {
        inbox.progress[slot].body_bytes += len as u64;
    }
    0
}

unsafe extern "C" fn on_frame(
    session: *mut ng::nghttp2_session,
    frame: *const ng::nghttp2_frame,
    user_data: *mut c_void,
) -> c_int {
    let (inbox, header) = unsafe { (inbox(user_data), (*frame).hd) };
    let kind = u32::from(header.type_);
    if kind == ng::NGHTTP2_GOAWAY {
        let goaway = unsafe { (*frame).goaway };
        inbox.goaway = Some((goaway.error_code, goaway.last_stream_id as u32));
    }
    let ends = u32::from(header.flags) & ng::NGHTTP2_FLAG_END_STREAM != 0;
    if ends
        && (kind == ng::NGHTTP2_HEADERS || kind == ng::NGHTTP2_DATA)
        && let Some(slot) = unsafe { stream_slot(session, inbox, header.stream_id) }
    {
        inbox.progress[slot].ended = true;
        inbox.events.push(StreamEvent::Ended { slot });
    }
    0
}

unsafe extern "C" fn on_stream_close(
    session: *mut ng::nghttp2_session,
    stream_id: i32,
    error_code: u32,
    user_data: *mut c_void,
) -> c_int {
    let inbox = unsafe { inbox(user_data) };
    if let Some(slot) = unsafe { stream_slot(session, inbox, stream_id) }
        && !inbox.progress[slot].ended
    {
        let beyond_goaway = inbox.goaway.is_some_and(|(_, last)| stream_id as u32 > last);
        inbox.events.push(match beyond_goaway {
            true => StreamEvent::Unprocessed { slot },
            false => StreamEvent::Failed { slot, error_code },
        });
    }
    0
}

unsafe extern "C" fn on_frame_sent(
    _session: *mut ng::nghttp2_session,
    frame: *const ng::nghttp2_frame,
    user_data: *mut c_void,
) -> c_int {
    if u32::from(unsafe { (*frame).hd.type_ }) == ng::NGHTTP2_GOAWAY {
        unsafe { inbox(user_data) }.sent_goaway = Some(unsafe { (*frame).goaway.error_code });
    }
    0
}

/// A request HEADERS the library could not send (after a GOAWAY, say): its stream never opened.
unsafe extern "C" fn on_frame_not_sent(
    _session: *mut ng::nghttp2_session,
    frame: *const ng::nghttp2_frame,
    _error: c_int,
    user_data: *mut c_void,
) -> c_int {
    let (inbox, header) = unsafe { (inbox(user_data), (*frame).hd) };
    let stream_id = header.stream_id as u32;
    if u32::from(header.type_) == ng::NGHTTP2_HEADERS
        && let Some(slot) = inbox.stream_ids.iter().position(|&id| id == stream_id)
    {
        inbox.stream_ids[slot] = 0;
        inbox.events.push(StreamEvent::Unprocessed { slot });
    }
    0
}

/// Hands the library the next piece of a slot's request body.
unsafe extern "C" fn read_body(
    session: *mut ng::nghttp2_session,
    stream_id: i32,
    buf: *mut u8,
    length: usize,
    data_flags: *mut u32,
    _source: *mut ng::nghttp2_data_source,
    user_data: *mut c_void,
) -> ng::nghttp2_ssize {
    let inbox = unsafe { inbox(user_data) };
    let Some(slot) = (unsafe { stream_slot(session, inbox, stream_id) }) else {
        return ng::NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE as ng::nghttp2_ssize;
    };
    let (body, taken) = &mut inbox.bodies[slot];
    let n = length.min(body.len() - *taken);
    unsafe { ptr::copy_nonoverlapping(body[*taken..].as_ptr(), buf, n) };
    *taken += n;
    if *taken == body.len() {
        unsafe { *data_flags |= ng::NGHTTP2_DATA_FLAG_EOF };
    }
    n as ng::nghttp2_ssize
}

/// The library's words for one of its error codes.
fn library_error(code: isize) -> String {
    // SAFETY: the library returns a static NUL-terminated string for any code.
    let text = unsafe { CStr::from_ptr(ng::nghttp2_strerror(code as c_int)) };
    text.to_string_lossy().into_owned()
}

/// The protocol's name for an HTTP/2 error code (PROTOCOL_ERROR, REFUSED_STREAM, ...).
pub(crate) fn error_code_name(code: u32) -> String {
    // SAFETY: the library returns a static NUL-terminated string for any code.
    let text = unsafe { CStr::from_ptr(ng::nghttp2_http2_strerror(code)) };
    text.to_string_lossy().into_owned()
}

impl Session {
    /// A client session for a connection with `slots` request slots. It advertises our
    /// windows and no server push; until the server's SETTINGS arrive it opens one stream
    /// (Go, grpc-go, Node and nghttpd refuse streams past their limit opened before the
    /// client read it, hypercorn closes the connection).
    pub fn client(
        settings: &Http2Settings,
        requests: Rc<Requests>,
        slots: usize,
        want_server: bool,
    ) -> Result<Session, String> {
        let inbox = Box::into_raw(Box::new(Inbox {
            progress: vec![Progress::default(); slots],
            bodies: vec![(bytes::Bytes::new(), 0); slots],
            stream_ids: vec![0; slots],
            events: Vec::new(),
            want_server,
            server: None,
            goaway: None,
            sent_goaway: None,
        }));
        // SAFETY: `Box::into_raw` never gives null. From here the session owns it: every
        // return below frees it, through `Session`'s `Drop` or by hand before one exists.
        let inbox = unsafe { NonNull::new_unchecked(inbox) };
        // SAFETY: only on a path that returns before `Session` owns the inbox: freed once.
        let free_inbox = || drop(unsafe { Box::from_raw(inbox.as_ptr()) });
        let mut callbacks = ptr::null_mut();
        let mut option = ptr::null_mut();
        let mut raw = ptr::null_mut();
        // SAFETY: each call gets the out-pointers and objects the library documents, the
        // callbacks and options are deleted once the session has copied them, and `user_data`
        // is the inbox's raw pointer, valid until `Drop` deletes the session first.
        unsafe {
            if ng::nghttp2_session_callbacks_new(&mut callbacks) != 0 {
                free_inbox();
                return Err("HTTP/2: out of memory".to_string());
            }
            ng::nghttp2_session_callbacks_set_on_header_callback(callbacks, Some(on_header));
            ng::nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks, Some(on_data_chunk));
            ng::nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks, Some(on_frame));
            ng::nghttp2_session_callbacks_set_on_stream_close_callback(callbacks, Some(on_stream_close));
            ng::nghttp2_session_callbacks_set_on_frame_not_send_callback(callbacks, Some(on_frame_not_sent));
            ng::nghttp2_session_callbacks_set_on_frame_send_callback(callbacks, Some(on_frame_sent));
            if ng::nghttp2_option_new(&mut option) != 0 {
                ng::nghttp2_session_callbacks_del(callbacks);
                free_inbox();
                return Err("HTTP/2: out of memory".to_string());
            }
            ng::nghttp2_option_set_peer_max_concurrent_streams(option, 1);
            let user_data = inbox.as_ptr().cast::<c_void>();
            let created = ng::nghttp2_session_client_new2(&mut raw, callbacks, user_data, option);
            ng::nghttp2_option_del(option);
            ng::nghttp2_session_callbacks_del(callbacks);
            if created != 0 {
                free_inbox();
                return Err(format!("HTTP/2: {}", library_error(created as isize)));
            }
        }
        let Some(raw) = NonNull::new(raw) else {
            free_inbox();
            return Err("HTTP/2: no session".to_string());
        };
        let session = Session { raw, inbox, requests };
        let entries = [
            ng::nghttp2_settings_entry { settings_id: ng::NGHTTP2_SETTINGS_ENABLE_PUSH as i32, value: 0 },
            ng::nghttp2_settings_entry {
                settings_id: ng::NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE as i32,
                value: settings.stream_window_bytes,
            },
        ];
        let raw = session.raw.as_ptr();
        // SAFETY: `raw` is the live session; the library copies `entries` before it returns.
        let submitted = unsafe {
            ng::nghttp2_submit_settings(raw, ng::NGHTTP2_FLAG_NONE as u8, entries.as_ptr(), entries.len())
        };
        if submitted != 0 {
            return Err(format!("HTTP/2 SETTINGS: {}", library_error(submitted as isize)));
        }
        if settings.connection_window_bytes > 65_535 {
            let window = settings.connection_window_bytes.min(i32::MAX as u32) as i32;
            // SAFETY: `raw` is the live session; stream 0 is the connection.
            let set = unsafe {
                ng::nghttp2_session_set_local_window_size(raw, ng::NGHTTP2_FLAG_NONE as u8, 0, window)
            };
            if set != 0 {
                return Err(format!("HTTP/2 connection window: {}", library_error(set as isize)));
            }
        }
        Ok(session)
    }

    /// The inbox, read between library calls.
    fn inbox(&self) -> &Inbox {
        // SAFETY: the pointer is live until `Drop`; the library writes through it only inside
        // the calls this session makes with `&mut self`, so never while `&self` lends it out.
        unsafe { self.inbox.as_ref() }
    }

    /// The inbox, written between library calls.
    fn inbox_mut(&mut self) -> &mut Inbox {
        // SAFETY: as `inbox`; `&mut self` makes this the only reference until it ends, and no
        // library call (whose callbacks take their own) is made while it lives.
        unsafe { self.inbox.as_mut() }
    }

    /// Queues request `index` of the run for `slot`; its stream id. The library sends its
    /// HEADERS when the server's stream limit allows.
    pub fn submit(&mut self, slot: usize, index: usize) -> Result<u32, SubmitError> {
        // The library would take it and fail it only when its turn to be sent came.
        // SAFETY: `raw` is the live session, used only from this thread.
        if unsafe { ng::nghttp2_session_check_request_allowed(self.raw.as_ptr()) } == 0 {
            return Err(SubmitError::NoNewStreams);
        }
        let requests = Rc::clone(&self.requests);
        let (request, fields) = (&requests.requests[index], &requests.fields[index]);
        let inbox = self.inbox_mut();
        inbox.progress[slot] = Progress::default();
        inbox.bodies[slot] = (request.body.clone(), 0);
        let provider = ng::nghttp2_data_provider2 {
            source: ng::nghttp2_data_source { ptr: ptr::null_mut() },
            read_callback: Some(read_body),
        };
        let body = if request.body.is_empty() { ptr::null() } else { &provider as *const _ };
        // The library copies the array but not the names and values, and calls `read_body`
        // for the body.
        // SAFETY: `raw` is live; `fields` (names and values) live in `requests` as long as the
        // session (dropped after it), and `provider` is copied by the call.
        let id = unsafe {
            ng::nghttp2_submit_request2(
                self.raw.as_ptr(),
                ptr::null(),
                fields.as_ptr(),
                fields.len(),
                body,
                slot_pointer(slot),
            )
        };
        match id {
            id if id > 0 => {
                self.inbox_mut().stream_ids[slot] = id as u32;
                Ok(id as u32)
            }
            code if code == ng::NGHTTP2_ERR_STREAM_ID_NOT_AVAILABLE
                || code == ng::NGHTTP2_ERR_START_STREAM_NOT_ALLOWED =>
            {
                Err(SubmitError::NoNewStreams)
            }
            code => Err(SubmitError::Other(format!("HTTP/2 request: {}", library_error(code as isize)))),
        }
    }

    /// Drops a stream (RST_STREAM CANCEL) whose slot gave up on it; nothing more of it is reported.
    pub fn cancel(&mut self, stream_id: u32) {
        let raw = self.raw.as_ptr();
        let id = stream_id as i32;
        let inbox = self.inbox_mut();
        if let Some(slot) = inbox.stream_ids.iter().position(|&s| s == stream_id) {
            inbox.stream_ids[slot] = 0;
        }
        // SAFETY: `raw` is live; a stream id the library no longer knows is ignored by both.
        unsafe {
            ng::nghttp2_session_set_stream_user_data(raw, id, ptr::null_mut());
            ng::nghttp2_submit_rst_stream(raw, ng::NGHTTP2_FLAG_NONE as u8, id, ng::NGHTTP2_CANCEL);
        }
    }

    /// Feeds what the socket gave; an error ends the connection (the library has queued
    /// its GOAWAY).
    pub fn receive(&mut self, bytes: &[u8]) -> Result<(), String> {
        // SAFETY: `raw` is live and `bytes` is valid for its length during the call.
        let used = unsafe { ng::nghttp2_session_mem_recv2(self.raw.as_ptr(), bytes.as_ptr(), bytes.len()) };
        if used < 0 { Err(library_error(used)) } else { Ok(()) }
    }

    /// Appends every frame the session has ready to `out`, up to about `limit` bytes.
    pub fn take_output(&mut self, out: &mut Vec<u8>, limit: usize) -> Result<(), String> {
        while out.len() < limit {
            let mut data = ptr::null();
            // SAFETY: `raw` is live; `data` is an out-pointer the call fills.
            let n = unsafe { ng::nghttp2_session_mem_send2(self.raw.as_ptr(), &mut data) };
            if n < 0 {
                return Err(library_error(n));
            }
            if n == 0 {
                break;
            }
            // SAFETY: the library's buffer holds `n` bytes until its next call.
            out.extend_from_slice(unsafe { std::slice::from_raw_parts(data, n as usize) });
        }
        Ok(())
    }

    /// Neither side has anything left to say: after a GOAWAY with no streams left, or a
    /// fatal error.
    pub fn is_over(&self) -> bool {
        let raw = self.raw.as_ptr();
        // SAFETY: `raw` is live; both calls only read the session's state.
        unsafe { ng::nghttp2_session_want_read(raw) == 0 && ng::nghttp2_session_want_write(raw) == 0 }
    }

    /// Moves the events since the last call into `into` (emptied first).
    pub fn take_events(&mut self, into: &mut Vec<StreamEvent>) {
        into.clear();
        std::mem::swap(&mut self.inbox_mut().events, into);
    }

    pub fn progress(&self, slot: usize) -> Progress {
        self.inbox().progress[slot]
    }

    /// The server's `server` header, once: later calls give None.
    pub fn take_server_header(&mut self) -> Option<String> {
        self.inbox_mut().server.take()
    }

    /// The error code of the server's GOAWAY, if it sent one.
    pub fn goaway(&self) -> Option<u32> {
        self.inbox().goaway.map(|(code, _)| code)
    }

    /// The error code of the GOAWAY the library sent when the server broke the protocol.
    pub fn sent_goaway(&self) -> Option<u32> {
        self.inbox().sent_goaway
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        // SAFETY: the session is ours and deleted once; no callback runs after it, so the
        // inbox it pointed into is freed last, from the `Box` it came from.
        unsafe {
            ng::nghttp2_session_del(self.raw.as_ptr());
            drop(Box::from_raw(self.inbox.as_ptr()));
        }
    }
}

/// For fuzz/fuzz_targets/h2_session.rs, not an API: a session with two slots, each asking
/// again as soon as its stream ends, fed a server's bytes in pieces of the sizes `pieces`
/// gives (round and round; 0 counts as 1), writing out after each piece as the worker does.
/// What it saw, in words: every event names a slot that exists, a slot ends at most once per
/// request, and nothing panics. Ends at the library's first error, as the worker does.
pub fn drive_session(received: &[u8], pieces: &[usize]) -> String {
    let slots = 2;
    let get =
        super::request::from_http11(b"POST /x HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\n\r\nabc", false)
            .expect("a fixed request");
    let settings = Http2Settings { streams_per_connection: slots, ..Http2Settings::default() };
    let Ok(mut session) = Session::client(&settings, Requests::new(vec![get]), slots, true) else {
        return "no session".to_string();
    };
    let (mut out, mut events, mut said) = (Vec::new(), Vec::new(), Vec::new());
    let mut in_flight = [false; 2];
    for (slot, flying) in in_flight.iter_mut().enumerate() {
        *flying = session.submit(slot, 0).is_ok();
    }
    let mut rest = received;
    for &piece in pieces.iter().cycle().take(received.len().max(1)) {
        if rest.is_empty() {
            break;
        }
        let (head, tail) = rest.split_at(piece.clamp(1, rest.len()));
        rest = tail;
        out.clear();
        if let Err(e) = session.take_output(&mut out, 1 << 16) {
            said.push(format!("send: {e}"));
            break;
        }
        if let Err(e) = session.receive(head) {
            said.push(format!("receive: {e}"));
            break;
        }
        session.take_events(&mut events);
        for event in &events {
            let slot = match *event {
                StreamEvent::Ended { slot }
                | StreamEvent::Failed { slot, .. }
                | StreamEvent::Unprocessed { slot } => slot,
            };
            assert!(slot < slots, "{event:?}");
            assert!(in_flight[slot], "an event for slot {slot}, which waits for nothing: {event:?}");
            in_flight[slot] = false;
            said.push(format!("{event:?} {:?}", session.progress(slot)));
        }
        for (slot, flying) in in_flight.iter_mut().enumerate() {
            if !*flying {
                *flying = session.submit(slot, 0).is_ok();
            }
        }
    }
    said.push(format!(
        "over {} goaway {:?} ours {:?}",
        session.is_over(),
        session.goaway(),
        session.sent_goaway()
    ));
    said.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::h2::test_frames::frame;

    const HEADERS: u8 = 0x1;
    const DATA: u8 = 0x0;
    const RST_STREAM: u8 = 0x3;
    const END_STREAM: u8 = 0x1;
    const END_HEADERS: u8 = 0x4;
    /// HPACK: `:status: 200`, the static table's entry 8.
    const STATUS_200: &[u8] = &[0x88];

    /// The server's (empty) SETTINGS, which must come first.
    fn settings() -> Vec<u8> {
        frame(0x4, 0, 0, &[])
    }

    fn get() -> StreamRequest {
        super::super::request::from_http11(b"GET /x HTTP/1.1\r\nHost: h\r\n\r\n", false).unwrap()
    }

    /// A session with `slots` slots whose preface and SETTINGS went out.
    fn session(slots: usize) -> Session {
        let requests = Requests::new(vec![get()]);
        let mut session = Session::client(&Http2Settings::default(), requests, slots, true).unwrap();
        let mut out = Vec::new();
        session.take_output(&mut out, 1 << 16).unwrap();
        assert!(out.starts_with(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"));
        session
    }

    fn events(session: &mut Session) -> Vec<StreamEvent> {
        let mut events = Vec::new();
        session.take_events(&mut events);
        events
    }

    #[test]
    fn a_response_ends_its_slots_stream_with_its_status_and_body_bytes() {
        let mut session = session(2);
        assert_eq!(session.submit(1, 0), Ok(1));
        session.take_output(&mut Vec::new(), 1 << 16).unwrap();
        let mut server = settings();
        server.extend(frame(HEADERS, END_HEADERS, 1, STATUS_200));
        server.extend(frame(DATA, 0, 1, b"hello"));
        session.receive(&server).unwrap();
        assert_eq!(events(&mut session), []);
        session.receive(&frame(DATA, END_STREAM, 1, b"!")).unwrap();
        assert_eq!(events(&mut session), [StreamEvent::Ended { slot: 1 }]);
        let progress = session.progress(1);
        assert_eq!((progress.status, progress.body_bytes, progress.grpc_status), (200, 6, None));
    }

    #[test]
    fn a_grpc_status_in_the_trailers_is_the_one_that_stands() {
        let mut session = session(1);
        session.submit(0, 0).unwrap();
        session.take_output(&mut Vec::new(), 1 << 16).unwrap();
        // HPACK literals without indexing, new names: grpc-status 0, then 5 in the trailers.
        let literal = |value: u8| [&[0x00, 11][..], b"grpc-status", &[1, value]].concat();
        let mut server = settings();
        server.extend(frame(HEADERS, END_HEADERS, 1, &[STATUS_200, &literal(b'0')].concat()));
        server.extend(frame(HEADERS, END_HEADERS | END_STREAM, 1, &literal(b'5')));
        session.receive(&server).unwrap();
        assert_eq!(events(&mut session), [StreamEvent::Ended { slot: 0 }]);
        assert_eq!(session.progress(0).grpc_status, Some(5));
    }

    #[test]
    fn a_stream_the_server_resets_fails_with_its_code() {
        let mut session = session(1);
        session.submit(0, 0).unwrap();
        session.take_output(&mut Vec::new(), 1 << 16).unwrap();
        let mut server = settings();
        server.extend(frame(RST_STREAM, 0, 1, &7u32.to_be_bytes()));
        session.receive(&server).unwrap();
        assert_eq!(events(&mut session), [StreamEvent::Failed { slot: 0, error_code: 7 }]);
        assert_eq!(error_code_name(7), "REFUSED_STREAM");
    }

    #[test]
    fn a_stream_given_up_on_reports_nothing_to_the_slots_next_request() {
        let mut session = session(1);
        assert_eq!(session.submit(0, 0), Ok(1));
        session.take_output(&mut Vec::new(), 1 << 16).unwrap();
        session.cancel(1);
        assert_eq!(session.submit(0, 0), Ok(3));
        let mut server = settings();
        server.extend(frame(HEADERS, END_HEADERS | END_STREAM, 1, STATUS_200));
        session.receive(&server).unwrap();
        assert_eq!(events(&mut session), [], "the late answer to stream 1 is not slot 0's");
        session.take_output(&mut Vec::new(), 1 << 16).unwrap();
        session.receive(&frame(HEADERS, END_HEADERS | END_STREAM, 3, STATUS_200)).unwrap();
        assert_eq!(events(&mut session), [StreamEvent::Ended { slot: 0 }]);
    }

    #[test]
    fn after_a_goaway_no_new_stream_is_taken() {
        let mut session = session(2);
        session.submit(0, 0).unwrap();
        session.take_output(&mut Vec::new(), 1 << 16).unwrap();
        let mut server = settings();
        // GOAWAY: last stream 1, NO_ERROR.
        server.extend(frame(0x7, 0, 0, &[1u32.to_be_bytes(), 0u32.to_be_bytes()].concat()));
        session.receive(&server).unwrap();
        assert_eq!(session.goaway(), Some(0));
        assert_eq!(session.submit(1, 0), Err(SubmitError::NoNewStreams));
        assert!(!session.is_over(), "stream 1 is still to be answered");
        session.receive(&frame(HEADERS, END_HEADERS | END_STREAM, 1, STATUS_200)).unwrap();
        assert_eq!(events(&mut session), [StreamEvent::Ended { slot: 0 }]);
        session.take_output(&mut Vec::new(), 1 << 16).unwrap();
        assert!(session.is_over());
    }

    #[test]
    fn a_request_still_waiting_for_the_stream_limit_when_a_goaway_comes_was_not_sent() {
        let mut session = session(2);
        assert_eq!(session.submit(0, 0), Ok(1));
        // Until the server's SETTINGS, one stream at a time: slot 1's HEADERS wait.
        assert_eq!(session.submit(1, 0), Ok(3));
        session.take_output(&mut Vec::new(), 1 << 16).unwrap();
        let goaway = frame(0x7, 0, 0, &[1u32.to_be_bytes(), 0u32.to_be_bytes()].concat());
        session.receive(&[settings(), goaway].concat()).unwrap();
        session.take_output(&mut Vec::new(), 1 << 16).unwrap();
        assert_eq!(events(&mut session), [StreamEvent::Unprocessed { slot: 1 }]);
    }

    #[test]
    fn a_stream_sent_beyond_the_goaways_last_stream_was_not_processed() {
        let mut session = session(2);
        let mut server = settings();
        server.extend(frame(0x4, 0, 0, &[0, 3, 0, 0, 0, 100])); // MAX_CONCURRENT_STREAMS 100
        session.receive(&server).unwrap();
        assert_eq!(session.submit(0, 0), Ok(1));
        assert_eq!(session.submit(1, 0), Ok(3));
        session.take_output(&mut Vec::new(), 1 << 16).unwrap();
        let goaway = frame(0x7, 0, 0, &[1u32.to_be_bytes(), 0u32.to_be_bytes()].concat());
        let answer = frame(HEADERS, END_HEADERS | END_STREAM, 1, STATUS_200);
        session.receive(&[goaway, answer].concat()).unwrap();
        assert_eq!(
            events(&mut session),
            [StreamEvent::Unprocessed { slot: 1 }, StreamEvent::Ended { slot: 0 }]
        );
    }

    #[test]
    fn the_fuzz_driver_hears_each_answer_once() {
        let mut server = frame(0x4, 0, 0, &[0, 3, 0, 0, 0, 100]);
        server.extend(frame(HEADERS, END_HEADERS, 1, STATUS_200));
        server.extend(frame(DATA, END_STREAM, 1, b"ok"));
        server.extend(frame(HEADERS, END_HEADERS | END_STREAM, 3, STATUS_200));
        // Stream 3 leaves once the server's SETTINGS are in (one stream until then): its
        // answer comes in a later piece, as from a real server.
        for pieces in [&[15, server.len()][..], &[1]] {
            let said = drive_session(&server, pieces);
            assert!(
                said.starts_with(
                    "Ended { slot: 0 } Progress { status: 200, grpc_status: None, body_bytes: 2"
                ),
                "{said}"
            );
            assert!(said.contains("Ended { slot: 1 } Progress { status: 200"), "{said}");
        }
    }

    #[test]
    fn bytes_that_are_not_http2_end_the_session_with_our_goaway() {
        let mut session = session(1);
        session.submit(0, 0).unwrap();
        session.take_output(&mut Vec::new(), 1 << 16).unwrap();
        let _ = session.receive(b"HTTP/1.1 400 Bad Request\r\n\r\n");
        session.take_output(&mut Vec::new(), 1 << 16).unwrap();
        assert!(session.is_over());
        assert!(session.sent_goaway().is_some_and(|code| code != 0));
        assert_eq!(session.goaway(), None);
    }
}
