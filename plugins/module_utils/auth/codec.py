# -*- coding: utf-8 -*-
# Copyright: enmasse.messaging contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A minimal AMQP 1.0 codec: what the auth service needs and nothing more.

* the type system (OASIS AMQP 1.0 part 1): every primitive type decodes (so a
  peer's open frame of any shape can be read); the encoder writes null,
  booleans, unsigned and signed integers, binary, string, symbol, list, map,
  array and described values;
* frames (part 2.3): ``size(4) doff(1) type(1) channel(2)``, type 0 = AMQP,
  1 = SASL; the protocol headers ``AMQP 0 1 0 0`` and ``AMQP 3 1 0 0``;
* the performatives the service exchanges: ``open``, ``close`` and the SASL
  frames ``sasl-mechanisms``, ``sasl-init``, ``sasl-challenge``,
  ``sasl-response``, ``sasl-outcome``.

Pure standard library, no Ansible import: the auth service role copies this
file onto the host beside server.py and backends.py."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import struct
import uuid

AMQP_HEADER = b"AMQP\x00\x01\x00\x00"
SASL_HEADER = b"AMQP\x03\x01\x00\x00"
TLS_HEADER = b"AMQP\x02\x01\x00\x00"

FRAME_AMQP = 0
FRAME_SASL = 1
MIN_MAX_FRAME_SIZE = 512

# descriptors (ulong codes) of the performatives used here
OPEN = 0x10
CLOSE = 0x18
ERROR = 0x1D
SASL_MECHANISMS = 0x40
SASL_INIT = 0x41
SASL_CHALLENGE = 0x42
SASL_RESPONSE = 0x43
SASL_OUTCOME = 0x44

# sasl-outcome codes
SASL_OK = 0
SASL_AUTH = 1
SASL_SYS = 2
SASL_SYS_PERM = 3
SASL_SYS_TEMP = 4

PERFORMATIVE_NAMES = {
    OPEN: "open", CLOSE: "close", SASL_MECHANISMS: "sasl-mechanisms", SASL_INIT: "sasl-init",
    SASL_CHALLENGE: "sasl-challenge", SASL_RESPONSE: "sasl-response", SASL_OUTCOME: "sasl-outcome",
    0x11: "begin", 0x12: "attach", 0x13: "flow", 0x14: "transfer", 0x15: "disposition",
    0x16: "detach", 0x17: "end",
}

# field names of the performatives, in list order
OPEN_FIELDS = ("container_id", "hostname", "max_frame_size", "channel_max", "idle_time_out",
               "outgoing_locales", "incoming_locales", "offered_capabilities",
               "desired_capabilities", "properties")
CLOSE_FIELDS = ("error",)
ERROR_FIELDS = ("condition", "description", "info")
SASL_FIELDS = {
    SASL_MECHANISMS: ("sasl_server_mechanisms",),
    SASL_INIT: ("mechanism", "initial_response", "hostname"),
    SASL_CHALLENGE: ("challenge",),
    SASL_RESPONSE: ("response",),
    SASL_OUTCOME: ("code", "additional_data"),
}


class DecodeError(ValueError):
    """The bytes are not valid AMQP 1.0 encoding (or use what is not supported)."""


class Symbol(str):
    """An AMQP symbol (ASCII); a plain ``str`` encodes as an AMQP string."""

    def __repr__(self):
        return "Symbol(%s)" % str.__repr__(self)


class UByte(int):
    """An AMQP ubyte."""


class UShort(int):
    """An AMQP ushort."""


class UInt(int):
    """An AMQP uint."""


class ULong(int):
    """An AMQP ulong."""


class Char(str):
    """An AMQP char (one UTF-32 code point)."""


class Timestamp(int):
    """An AMQP timestamp (milliseconds since the Unix epoch)."""


class Described(object):
    """A described value: ``descriptor`` (ulong or symbol) and ``value``."""

    def __init__(self, descriptor, value):
        self.descriptor = descriptor
        self.value = value

    def __eq__(self, other):
        return isinstance(other, Described) and (self.descriptor, self.value) == (other.descriptor, other.value)

    def __ne__(self, other):
        return not self == other

    def __hash__(self):
        return hash(self.descriptor)

    def __repr__(self):
        return "Described(%r, %r)" % (self.descriptor, self.value)


class Array(list):
    """An AMQP array: every element has the one type ``element_type`` (one of
    ``"symbol"``, ``"string"``, ``"ubyte"``, ``"ushort"``, ``"uint"``,
    ``"ulong"``, ``"int"``, ``"long"``, ``"boolean"``, ``"binary"``, or an
    AMQP constructor code when decoded from a type this codec does not name)."""

    def __init__(self, element_type, items=()):
        super(Array, self).__init__(items)
        self.element_type = element_type

    def __eq__(self, other):
        if isinstance(other, Array):
            return self.element_type == other.element_type and list(self) == list(other)
        return list.__eq__(self, other)

    def __ne__(self, other):
        return not self == other

    __hash__ = None

    def __repr__(self):
        return "Array(%r, %s)" % (self.element_type, list.__repr__(self))


# ---------------------------------------------------------------- decoding

_FIXED = {
    0x50: (1, lambda b: UByte(b[0])),
    0x51: (1, lambda b: struct.unpack(">b", b)[0]),
    0x60: (2, lambda b: UShort(struct.unpack(">H", b)[0])),
    0x61: (2, lambda b: struct.unpack(">h", b)[0]),
    0x70: (4, lambda b: UInt(struct.unpack(">I", b)[0])),
    0x71: (4, lambda b: struct.unpack(">i", b)[0]),
    0x72: (4, lambda b: struct.unpack(">f", b)[0]),
    0x73: (4, lambda b: Char(chr(struct.unpack(">I", b)[0]))),
    0x74: (4, bytes),  # decimal32, kept raw
    0x80: (8, lambda b: ULong(struct.unpack(">Q", b)[0])),
    0x81: (8, lambda b: struct.unpack(">q", b)[0]),
    0x82: (8, lambda b: struct.unpack(">d", b)[0]),
    0x83: (8, lambda b: Timestamp(struct.unpack(">q", b)[0])),
    0x84: (8, bytes),  # decimal64, kept raw
    0x94: (16, bytes),  # decimal128, kept raw
    0x98: (16, lambda b: uuid.UUID(bytes=bytes(b))),
    0x52: (1, lambda b: UInt(b[0])),
    0x53: (1, lambda b: ULong(b[0])),
    0x54: (1, lambda b: struct.unpack(">b", b)[0]),
    0x55: (1, lambda b: struct.unpack(">b", b)[0]),
    0x56: (1, lambda b: b[0] != 0),
}
_EMPTY = {0x40: None, 0x41: True, 0x42: False, 0x43: UInt(0), 0x44: ULong(0), 0x45: []}
_VARIABLE = {0xA0: 1, 0xB0: 4, 0xA1: 1, 0xB1: 4, 0xA3: 1, 0xB3: 4}
_COMPOUND = {0xC0: 1, 0xD0: 4, 0xC1: 1, 0xD1: 4}
_ARRAY = {0xE0: 1, 0xF0: 4}
_TYPE_NAMES = {
    0xA3: "symbol", 0xB3: "symbol", 0xA1: "string", 0xB1: "string", 0xA0: "binary", 0xB0: "binary",
    0x50: "ubyte", 0x60: "ushort", 0x70: "uint", 0x52: "uint", 0x43: "uint", 0x80: "ulong", 0x53: "ulong",
    0x44: "ulong", 0x71: "int", 0x54: "int", 0x81: "long", 0x55: "long", 0x56: "boolean", 0x41: "boolean",
    0x42: "boolean",
}


class _Reader(object):
    def __init__(self, data):
        self.data = memoryview(data)
        self.pos = 0

    def take(self, n):
        if n < 0 or self.pos + n > len(self.data):
            raise DecodeError("truncated: %d bytes needed at offset %d, %d left"
                              % (n, self.pos, len(self.data) - self.pos))
        out = self.data[self.pos:self.pos + n]
        self.pos += n
        return out

    def byte(self):
        return self.take(1)[0]

    def size(self, width):
        raw = self.take(width)
        return raw[0] if width == 1 else struct.unpack(">I", raw)[0]


def _decode_payload(reader, code):
    """The value of a constructor ``code`` whose payload starts at reader.pos."""
    if code in _EMPTY:
        value = _EMPTY[code]
        return [] if code == 0x45 else value
    if code in _FIXED:
        width, conv = _FIXED[code]
        return conv(reader.take(width))
    if code in _VARIABLE:
        raw = bytes(reader.take(reader.size(_VARIABLE[code])))
        if code in (0xA0, 0xB0):
            return raw
        try:
            text = raw.decode("utf-8" if code in (0xA1, 0xB1) else "ascii")
        except UnicodeDecodeError as exc:
            raise DecodeError("invalid %s: %s" % ("string" if code in (0xA1, 0xB1) else "symbol", exc))
        return text if code in (0xA1, 0xB1) else Symbol(text)
    if code in _COMPOUND:
        width = _COMPOUND[code]
        size = reader.size(width)
        end = reader.pos + size
        if end > len(reader.data):
            raise DecodeError("truncated compound: %d bytes announced at offset %d" % (size, reader.pos))
        count = reader.size(width)
        items = [_decode(reader) for unused in range(count)]
        if reader.pos != end:
            raise DecodeError("compound size %d does not match its %d elements" % (size, count))
        if code in (0xC0, 0xD0):
            return items
        if count % 2:
            raise DecodeError("map with an odd number (%d) of elements" % count)
        out = {}
        for i in range(0, count, 2):
            key = items[i]
            try:
                out[key] = items[i + 1]
            except TypeError:
                raise DecodeError("map key %r is not hashable" % (key,))
        return out
    if code in _ARRAY:
        width = _ARRAY[code]
        size = reader.size(width)
        end = reader.pos + size
        if end > len(reader.data):
            raise DecodeError("truncated array: %d bytes announced at offset %d" % (size, reader.pos))
        count = reader.size(width)
        elem = reader.byte()
        descriptor = None
        if elem == 0x00:
            descriptor = _decode(reader)
            elem = reader.byte()
        items = [_decode_payload(reader, elem) for unused in range(count)]
        if reader.pos != end:
            raise DecodeError("array size %d does not match its %d elements" % (size, count))
        if descriptor is not None:
            items = [Described(descriptor, v) for v in items]
        return Array(_TYPE_NAMES.get(elem, elem), items)
    raise DecodeError("unknown AMQP type constructor 0x%02x at offset %d" % (code, reader.pos - 1))


def _decode(reader):
    code = reader.byte()
    if code == 0x00:
        descriptor = _decode(reader)
        return Described(descriptor, _decode(reader))
    return _decode_payload(reader, code)


def decode(data):
    """``(value, bytes consumed)`` of the first encoded value in ``data``."""
    reader = _Reader(data)
    value = _decode(reader)
    return value, reader.pos


def decode_all(data):
    """Every value encoded one after the other in ``data``."""
    reader = _Reader(data)
    out = []
    while reader.pos < len(reader.data):
        out.append(_decode(reader))
    return out


# ---------------------------------------------------------------- encoding

def _enc_variable(small, large, raw):
    if len(raw) < 256:
        return struct.pack(">BB", small, len(raw)) + raw
    return struct.pack(">BI", large, len(raw)) + raw


def _enc_compound(small, large, count, body):
    if len(body) + 1 < 256 and count < 256:
        return struct.pack(">BBB", small, len(body) + 1, count) + body
    return struct.pack(">BII", large, len(body) + 4, count) + body


def _enc_int(value):
    if isinstance(value, UByte):
        return struct.pack(">BB", 0x50, value)
    if isinstance(value, UShort):
        return struct.pack(">BH", 0x60, value)
    if isinstance(value, UInt):
        if value == 0:
            return b"\x43"
        if value < 256:
            return struct.pack(">BB", 0x52, value)
        return struct.pack(">BI", 0x70, value)
    if isinstance(value, ULong):
        if value == 0:
            return b"\x44"
        if value < 256:
            return struct.pack(">BB", 0x53, value)
        return struct.pack(">BQ", 0x80, value)
    if isinstance(value, Timestamp):
        return struct.pack(">Bq", 0x83, value)
    if -128 <= value <= 127:
        return struct.pack(">Bb", 0x55, value)
    return struct.pack(">Bq", 0x81, value)


def _element_constructor(element_type):
    """(constructor byte, function encoding one element's payload)."""
    def sized(fmt):
        return lambda v: struct.pack(fmt, v)

    def text(encoding):
        def enc(v):
            raw = v if isinstance(v, bytes) else v.encode(encoding)
            return struct.pack(">I", len(raw)) + raw
        return enc

    table = {
        "symbol": (0xB3, text("ascii")),
        "string": (0xB1, text("utf-8")),
        "binary": (0xB0, text("utf-8")),
        "ubyte": (0x50, sized(">B")),
        "ushort": (0x60, sized(">H")),
        "uint": (0x70, sized(">I")),
        "ulong": (0x80, sized(">Q")),
        "int": (0x71, sized(">i")),
        "long": (0x81, sized(">q")),
        "boolean": (0x56, lambda v: b"\x01" if v else b"\x00"),
    }
    if element_type not in table:
        raise TypeError("cannot encode an array of %r" % (element_type,))
    return table[element_type]


def encode(value):
    """The AMQP 1.0 encoding of ``value``.

    None -> null, bool -> boolean, the int subclasses of this module -> their
    type (a plain int -> long), bytes -> binary, :class:`Symbol` -> symbol,
    str -> string, list/tuple -> list, dict -> map, :class:`Array` -> array,
    :class:`Described` -> described value."""
    if value is None:
        return b"\x40"
    if isinstance(value, bool):
        return b"\x41" if value else b"\x42"
    if isinstance(value, int):
        return _enc_int(value)
    if isinstance(value, float):
        return struct.pack(">Bd", 0x82, value)
    if isinstance(value, (bytes, bytearray)):
        return _enc_variable(0xA0, 0xB0, bytes(value))
    if isinstance(value, Symbol):
        return _enc_variable(0xA3, 0xB3, value.encode("ascii"))
    if isinstance(value, str):
        return _enc_variable(0xA1, 0xB1, value.encode("utf-8"))
    if isinstance(value, Described):
        return b"\x00" + encode(value.descriptor) + encode(value.value)
    if isinstance(value, Array):
        code, enc = _element_constructor(value.element_type)
        body = bytes([code]) + b"".join(enc(v) for v in value)
        return struct.pack(">BII", 0xF0, len(body) + 4, len(value)) + body
    if isinstance(value, (list, tuple)):
        if not value:
            return b"\x45"
        return _enc_compound(0xC0, 0xD0, len(value), b"".join(encode(v) for v in value))
    if isinstance(value, dict):
        body = b"".join(encode(k) + encode(v) for k, v in value.items())
        return _enc_compound(0xC1, 0xD1, 2 * len(value), body)
    raise TypeError("cannot encode %r as AMQP" % (value,))


# ---------------------------------------------------------------- frames

def frame(frame_type, body, channel=0):
    """One frame: the 8-byte frame header (doff 2, no extended header) and ``body``."""
    return struct.pack(">IBBH", 8 + len(body), 2, frame_type, channel) + body


def performative(code, fields):
    """A described list ``code`` with ``fields``; trailing None fields are left out."""
    fields = list(fields)
    while fields and fields[-1] is None:
        fields.pop()
    return encode(Described(ULong(code), fields))


def parse_frame_header(header):
    """``(size, doff, type, channel)`` of an 8-byte frame header, checked."""
    size, doff, ftype, channel = struct.unpack(">IBBH", bytes(header))
    if size < 8 or doff < 2 or doff * 4 > size:
        raise DecodeError("bad frame header: size %d, data offset %d" % (size, doff))
    return size, doff, ftype, channel


def parse_body(body):
    """``(code, fields)`` of a frame body holding one performative; ``(None,
    [])`` for an empty frame (a heartbeat). Fields are padded with None up to
    the names this module knows for ``code``."""
    if not body:
        return None, []
    value, unused = decode(body)
    if not isinstance(value, Described) or not isinstance(value.value, list):
        raise DecodeError("the frame body is not a described list: %r" % (value,))
    code = value.descriptor
    if isinstance(code, Symbol):
        code = _SYMBOLIC.get(str(code), code)
    fields = list(value.value)
    names = SASL_FIELDS.get(code) or {OPEN: OPEN_FIELDS, CLOSE: CLOSE_FIELDS}.get(code) or ()
    fields += [None] * (len(names) - len(fields))
    return code, fields


_SYMBOLIC = {
    "amqp:open:list": OPEN, "amqp:close:list": CLOSE, "amqp:sasl-mechanisms:list": SASL_MECHANISMS,
    "amqp:sasl-init:list": SASL_INIT, "amqp:sasl-challenge:list": SASL_CHALLENGE,
    "amqp:sasl-response:list": SASL_RESPONSE, "amqp:sasl-outcome:list": SASL_OUTCOME,
}


def as_dict(code, fields):
    """The fields of a known performative as a dict (name -> value)."""
    names = SASL_FIELDS.get(code) or {OPEN: OPEN_FIELDS, CLOSE: CLOSE_FIELDS}.get(code) or ()
    return dict(zip(names, fields))


def symbols(value):
    """A ``symbol multiple`` field (None, one symbol or an array) as a list of str."""
    if value is None:
        return []
    if isinstance(value, (list, tuple)):
        return [str(v) for v in value]
    return [str(value)]


def sasl_mechanisms(mechanisms):
    return frame(FRAME_SASL, performative(SASL_MECHANISMS, [Array("symbol", [Symbol(m) for m in mechanisms])]))


def sasl_init(mechanism, initial_response=None, hostname=None):
    return frame(FRAME_SASL, performative(SASL_INIT, [Symbol(mechanism), initial_response, hostname]))


def sasl_outcome(code, additional_data=None):
    return frame(FRAME_SASL, performative(SASL_OUTCOME, [UByte(code), additional_data]))


def open_frame(container_id, hostname=None, max_frame_size=None, channel_max=None,
               offered_capabilities=None, desired_capabilities=None, properties=None):
    """An open frame. Capabilities are lists of names (sent as symbol arrays),
    ``properties`` a dict whose str keys are sent as symbols."""
    def caps(names):
        return None if names is None else Array("symbol", [Symbol(n) for n in names])
    props = None
    if properties is not None:
        props = dict((Symbol(k) if not isinstance(k, Symbol) else k, v) for k, v in properties.items())
    fields = [container_id, hostname,
              None if max_frame_size is None else UInt(max_frame_size),
              None if channel_max is None else UShort(channel_max),
              None, None, None, caps(offered_capabilities), caps(desired_capabilities), props]
    return frame(FRAME_AMQP, performative(OPEN, fields))


def close_frame(condition=None, description=None):
    """A close frame, with an error when ``condition`` is given."""
    error = None
    if condition:
        error = Described(ULong(ERROR), [Symbol(condition), description])
    return frame(FRAME_AMQP, performative(CLOSE, [error]))
