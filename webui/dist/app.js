var __create = Object.create;
var __defProp = Object.defineProperty;
var __getOwnPropDesc = Object.getOwnPropertyDescriptor;
var __getOwnPropNames = Object.getOwnPropertyNames;
var __getProtoOf = Object.getPrototypeOf;
var __hasOwnProp = Object.prototype.hasOwnProperty;
var __commonJS = (cb, mod) => function __require() {
  try {
    return mod || (0, cb[__getOwnPropNames(cb)[0]])((mod = { exports: {} }).exports, mod), mod.exports;
  } catch (e) {
    throw mod = 0, e;
  }
};
var __copyProps = (to, from, except, desc) => {
  if (from && typeof from === "object" || typeof from === "function") {
    for (let key of __getOwnPropNames(from))
      if (!__hasOwnProp.call(to, key) && key !== except)
        __defProp(to, key, { get: () => from[key], enumerable: !(desc = __getOwnPropDesc(from, key)) || desc.enumerable });
  }
  return to;
};
var __toESM = (mod, isNodeMode, target) => (target = mod != null ? __create(__getProtoOf(mod)) : {}, __copyProps(
  // If the importer is in node compatibility mode or this is not an ESM
  // file that has been converted to a CommonJS file using a Babel-
  // compatible transform (i.e. "__esModule" has not been set), then set
  // "default" to the CommonJS "module.exports" for node compatibility.
  isNodeMode || !mod || !mod.__esModule ? __defProp(target, "default", { value: mod, enumerable: true }) : target,
  mod
));

// node_modules/spark-md5/spark-md5.js
var require_spark_md5 = __commonJS({
  "node_modules/spark-md5/spark-md5.js"(exports, module) {
    (function(factory) {
      if (typeof exports === "object") {
        module.exports = factory();
      } else if (typeof define === "function" && define.amd) {
        define(factory);
      } else {
        var glob;
        try {
          glob = window;
        } catch (e) {
          glob = self;
        }
        glob.SparkMD5 = factory();
      }
    })(function(undefined2) {
      "use strict";
      var add32 = function(a, b) {
        return a + b & 4294967295;
      }, hex_chr = ["0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "a", "b", "c", "d", "e", "f"];
      function cmn(q, a, b, x, s2, t) {
        a = add32(add32(a, q), add32(x, t));
        return add32(a << s2 | a >>> 32 - s2, b);
      }
      function md5cycle(x, k) {
        var a = x[0], b = x[1], c = x[2], d = x[3];
        a += (b & c | ~b & d) + k[0] - 680876936 | 0;
        a = (a << 7 | a >>> 25) + b | 0;
        d += (a & b | ~a & c) + k[1] - 389564586 | 0;
        d = (d << 12 | d >>> 20) + a | 0;
        c += (d & a | ~d & b) + k[2] + 606105819 | 0;
        c = (c << 17 | c >>> 15) + d | 0;
        b += (c & d | ~c & a) + k[3] - 1044525330 | 0;
        b = (b << 22 | b >>> 10) + c | 0;
        a += (b & c | ~b & d) + k[4] - 176418897 | 0;
        a = (a << 7 | a >>> 25) + b | 0;
        d += (a & b | ~a & c) + k[5] + 1200080426 | 0;
        d = (d << 12 | d >>> 20) + a | 0;
        c += (d & a | ~d & b) + k[6] - 1473231341 | 0;
        c = (c << 17 | c >>> 15) + d | 0;
        b += (c & d | ~c & a) + k[7] - 45705983 | 0;
        b = (b << 22 | b >>> 10) + c | 0;
        a += (b & c | ~b & d) + k[8] + 1770035416 | 0;
        a = (a << 7 | a >>> 25) + b | 0;
        d += (a & b | ~a & c) + k[9] - 1958414417 | 0;
        d = (d << 12 | d >>> 20) + a | 0;
        c += (d & a | ~d & b) + k[10] - 42063 | 0;
        c = (c << 17 | c >>> 15) + d | 0;
        b += (c & d | ~c & a) + k[11] - 1990404162 | 0;
        b = (b << 22 | b >>> 10) + c | 0;
        a += (b & c | ~b & d) + k[12] + 1804603682 | 0;
        a = (a << 7 | a >>> 25) + b | 0;
        d += (a & b | ~a & c) + k[13] - 40341101 | 0;
        d = (d << 12 | d >>> 20) + a | 0;
        c += (d & a | ~d & b) + k[14] - 1502002290 | 0;
        c = (c << 17 | c >>> 15) + d | 0;
        b += (c & d | ~c & a) + k[15] + 1236535329 | 0;
        b = (b << 22 | b >>> 10) + c | 0;
        a += (b & d | c & ~d) + k[1] - 165796510 | 0;
        a = (a << 5 | a >>> 27) + b | 0;
        d += (a & c | b & ~c) + k[6] - 1069501632 | 0;
        d = (d << 9 | d >>> 23) + a | 0;
        c += (d & b | a & ~b) + k[11] + 643717713 | 0;
        c = (c << 14 | c >>> 18) + d | 0;
        b += (c & a | d & ~a) + k[0] - 373897302 | 0;
        b = (b << 20 | b >>> 12) + c | 0;
        a += (b & d | c & ~d) + k[5] - 701558691 | 0;
        a = (a << 5 | a >>> 27) + b | 0;
        d += (a & c | b & ~c) + k[10] + 38016083 | 0;
        d = (d << 9 | d >>> 23) + a | 0;
        c += (d & b | a & ~b) + k[15] - 660478335 | 0;
        c = (c << 14 | c >>> 18) + d | 0;
        b += (c & a | d & ~a) + k[4] - 405537848 | 0;
        b = (b << 20 | b >>> 12) + c | 0;
        a += (b & d | c & ~d) + k[9] + 568446438 | 0;
        a = (a << 5 | a >>> 27) + b | 0;
        d += (a & c | b & ~c) + k[14] - 1019803690 | 0;
        d = (d << 9 | d >>> 23) + a | 0;
        c += (d & b | a & ~b) + k[3] - 187363961 | 0;
        c = (c << 14 | c >>> 18) + d | 0;
        b += (c & a | d & ~a) + k[8] + 1163531501 | 0;
        b = (b << 20 | b >>> 12) + c | 0;
        a += (b & d | c & ~d) + k[13] - 1444681467 | 0;
        a = (a << 5 | a >>> 27) + b | 0;
        d += (a & c | b & ~c) + k[2] - 51403784 | 0;
        d = (d << 9 | d >>> 23) + a | 0;
        c += (d & b | a & ~b) + k[7] + 1735328473 | 0;
        c = (c << 14 | c >>> 18) + d | 0;
        b += (c & a | d & ~a) + k[12] - 1926607734 | 0;
        b = (b << 20 | b >>> 12) + c | 0;
        a += (b ^ c ^ d) + k[5] - 378558 | 0;
        a = (a << 4 | a >>> 28) + b | 0;
        d += (a ^ b ^ c) + k[8] - 2022574463 | 0;
        d = (d << 11 | d >>> 21) + a | 0;
        c += (d ^ a ^ b) + k[11] + 1839030562 | 0;
        c = (c << 16 | c >>> 16) + d | 0;
        b += (c ^ d ^ a) + k[14] - 35309556 | 0;
        b = (b << 23 | b >>> 9) + c | 0;
        a += (b ^ c ^ d) + k[1] - 1530992060 | 0;
        a = (a << 4 | a >>> 28) + b | 0;
        d += (a ^ b ^ c) + k[4] + 1272893353 | 0;
        d = (d << 11 | d >>> 21) + a | 0;
        c += (d ^ a ^ b) + k[7] - 155497632 | 0;
        c = (c << 16 | c >>> 16) + d | 0;
        b += (c ^ d ^ a) + k[10] - 1094730640 | 0;
        b = (b << 23 | b >>> 9) + c | 0;
        a += (b ^ c ^ d) + k[13] + 681279174 | 0;
        a = (a << 4 | a >>> 28) + b | 0;
        d += (a ^ b ^ c) + k[0] - 358537222 | 0;
        d = (d << 11 | d >>> 21) + a | 0;
        c += (d ^ a ^ b) + k[3] - 722521979 | 0;
        c = (c << 16 | c >>> 16) + d | 0;
        b += (c ^ d ^ a) + k[6] + 76029189 | 0;
        b = (b << 23 | b >>> 9) + c | 0;
        a += (b ^ c ^ d) + k[9] - 640364487 | 0;
        a = (a << 4 | a >>> 28) + b | 0;
        d += (a ^ b ^ c) + k[12] - 421815835 | 0;
        d = (d << 11 | d >>> 21) + a | 0;
        c += (d ^ a ^ b) + k[15] + 530742520 | 0;
        c = (c << 16 | c >>> 16) + d | 0;
        b += (c ^ d ^ a) + k[2] - 995338651 | 0;
        b = (b << 23 | b >>> 9) + c | 0;
        a += (c ^ (b | ~d)) + k[0] - 198630844 | 0;
        a = (a << 6 | a >>> 26) + b | 0;
        d += (b ^ (a | ~c)) + k[7] + 1126891415 | 0;
        d = (d << 10 | d >>> 22) + a | 0;
        c += (a ^ (d | ~b)) + k[14] - 1416354905 | 0;
        c = (c << 15 | c >>> 17) + d | 0;
        b += (d ^ (c | ~a)) + k[5] - 57434055 | 0;
        b = (b << 21 | b >>> 11) + c | 0;
        a += (c ^ (b | ~d)) + k[12] + 1700485571 | 0;
        a = (a << 6 | a >>> 26) + b | 0;
        d += (b ^ (a | ~c)) + k[3] - 1894986606 | 0;
        d = (d << 10 | d >>> 22) + a | 0;
        c += (a ^ (d | ~b)) + k[10] - 1051523 | 0;
        c = (c << 15 | c >>> 17) + d | 0;
        b += (d ^ (c | ~a)) + k[1] - 2054922799 | 0;
        b = (b << 21 | b >>> 11) + c | 0;
        a += (c ^ (b | ~d)) + k[8] + 1873313359 | 0;
        a = (a << 6 | a >>> 26) + b | 0;
        d += (b ^ (a | ~c)) + k[15] - 30611744 | 0;
        d = (d << 10 | d >>> 22) + a | 0;
        c += (a ^ (d | ~b)) + k[6] - 1560198380 | 0;
        c = (c << 15 | c >>> 17) + d | 0;
        b += (d ^ (c | ~a)) + k[13] + 1309151649 | 0;
        b = (b << 21 | b >>> 11) + c | 0;
        a += (c ^ (b | ~d)) + k[4] - 145523070 | 0;
        a = (a << 6 | a >>> 26) + b | 0;
        d += (b ^ (a | ~c)) + k[11] - 1120210379 | 0;
        d = (d << 10 | d >>> 22) + a | 0;
        c += (a ^ (d | ~b)) + k[2] + 718787259 | 0;
        c = (c << 15 | c >>> 17) + d | 0;
        b += (d ^ (c | ~a)) + k[9] - 343485551 | 0;
        b = (b << 21 | b >>> 11) + c | 0;
        x[0] = a + x[0] | 0;
        x[1] = b + x[1] | 0;
        x[2] = c + x[2] | 0;
        x[3] = d + x[3] | 0;
      }
      function md5blk(s2) {
        var md5blks = [], i;
        for (i = 0; i < 64; i += 4) {
          md5blks[i >> 2] = s2.charCodeAt(i) + (s2.charCodeAt(i + 1) << 8) + (s2.charCodeAt(i + 2) << 16) + (s2.charCodeAt(i + 3) << 24);
        }
        return md5blks;
      }
      function md5blk_array(a) {
        var md5blks = [], i;
        for (i = 0; i < 64; i += 4) {
          md5blks[i >> 2] = a[i] + (a[i + 1] << 8) + (a[i + 2] << 16) + (a[i + 3] << 24);
        }
        return md5blks;
      }
      function md51(s2) {
        var n = s2.length, state2 = [1732584193, -271733879, -1732584194, 271733878], i, length, tail, tmp, lo, hi;
        for (i = 64; i <= n; i += 64) {
          md5cycle(state2, md5blk(s2.substring(i - 64, i)));
        }
        s2 = s2.substring(i - 64);
        length = s2.length;
        tail = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
        for (i = 0; i < length; i += 1) {
          tail[i >> 2] |= s2.charCodeAt(i) << (i % 4 << 3);
        }
        tail[i >> 2] |= 128 << (i % 4 << 3);
        if (i > 55) {
          md5cycle(state2, tail);
          for (i = 0; i < 16; i += 1) {
            tail[i] = 0;
          }
        }
        tmp = n * 8;
        tmp = tmp.toString(16).match(/(.*?)(.{0,8})$/);
        lo = parseInt(tmp[2], 16);
        hi = parseInt(tmp[1], 16) || 0;
        tail[14] = lo;
        tail[15] = hi;
        md5cycle(state2, tail);
        return state2;
      }
      function md51_array(a) {
        var n = a.length, state2 = [1732584193, -271733879, -1732584194, 271733878], i, length, tail, tmp, lo, hi;
        for (i = 64; i <= n; i += 64) {
          md5cycle(state2, md5blk_array(a.subarray(i - 64, i)));
        }
        a = i - 64 < n ? a.subarray(i - 64) : new Uint8Array(0);
        length = a.length;
        tail = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
        for (i = 0; i < length; i += 1) {
          tail[i >> 2] |= a[i] << (i % 4 << 3);
        }
        tail[i >> 2] |= 128 << (i % 4 << 3);
        if (i > 55) {
          md5cycle(state2, tail);
          for (i = 0; i < 16; i += 1) {
            tail[i] = 0;
          }
        }
        tmp = n * 8;
        tmp = tmp.toString(16).match(/(.*?)(.{0,8})$/);
        lo = parseInt(tmp[2], 16);
        hi = parseInt(tmp[1], 16) || 0;
        tail[14] = lo;
        tail[15] = hi;
        md5cycle(state2, tail);
        return state2;
      }
      function rhex(n) {
        var s2 = "", j;
        for (j = 0; j < 4; j += 1) {
          s2 += hex_chr[n >> j * 8 + 4 & 15] + hex_chr[n >> j * 8 & 15];
        }
        return s2;
      }
      function hex(x) {
        var i;
        for (i = 0; i < x.length; i += 1) {
          x[i] = rhex(x[i]);
        }
        return x.join("");
      }
      if (hex(md51("hello")) !== "5d41402abc4b2a76b9719d911017c592") {
        add32 = function(x, y) {
          var lsw = (x & 65535) + (y & 65535), msw = (x >> 16) + (y >> 16) + (lsw >> 16);
          return msw << 16 | lsw & 65535;
        };
      }
      if (typeof ArrayBuffer !== "undefined" && !ArrayBuffer.prototype.slice) {
        (function() {
          function clamp(val, length) {
            val = val | 0 || 0;
            if (val < 0) {
              return Math.max(val + length, 0);
            }
            return Math.min(val, length);
          }
          ArrayBuffer.prototype.slice = function(from, to) {
            var length = this.byteLength, begin = clamp(from, length), end = length, num, target, targetArray, sourceArray;
            if (to !== undefined2) {
              end = clamp(to, length);
            }
            if (begin > end) {
              return new ArrayBuffer(0);
            }
            num = end - begin;
            target = new ArrayBuffer(num);
            targetArray = new Uint8Array(target);
            sourceArray = new Uint8Array(this, begin, num);
            targetArray.set(sourceArray);
            return target;
          };
        })();
      }
      function toUtf8(str) {
        if (/[\u0080-\uFFFF]/.test(str)) {
          str = unescape(encodeURIComponent(str));
        }
        return str;
      }
      function utf8Str2ArrayBuffer(str, returnUInt8Array) {
        var length = str.length, buff = new ArrayBuffer(length), arr = new Uint8Array(buff), i;
        for (i = 0; i < length; i += 1) {
          arr[i] = str.charCodeAt(i);
        }
        return returnUInt8Array ? arr : buff;
      }
      function arrayBuffer2Utf8Str(buff) {
        return String.fromCharCode.apply(null, new Uint8Array(buff));
      }
      function concatenateArrayBuffers(first, second, returnUInt8Array) {
        var result = new Uint8Array(first.byteLength + second.byteLength);
        result.set(new Uint8Array(first));
        result.set(new Uint8Array(second), first.byteLength);
        return returnUInt8Array ? result : result.buffer;
      }
      function hexToBinaryString(hex2) {
        var bytes = [], length = hex2.length, x;
        for (x = 0; x < length - 1; x += 2) {
          bytes.push(parseInt(hex2.substr(x, 2), 16));
        }
        return String.fromCharCode.apply(String, bytes);
      }
      function SparkMD52() {
        this.reset();
      }
      SparkMD52.prototype.append = function(str) {
        this.appendBinary(toUtf8(str));
        return this;
      };
      SparkMD52.prototype.appendBinary = function(contents) {
        this._buff += contents;
        this._length += contents.length;
        var length = this._buff.length, i;
        for (i = 64; i <= length; i += 64) {
          md5cycle(this._hash, md5blk(this._buff.substring(i - 64, i)));
        }
        this._buff = this._buff.substring(i - 64);
        return this;
      };
      SparkMD52.prototype.end = function(raw) {
        var buff = this._buff, length = buff.length, i, tail = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0], ret;
        for (i = 0; i < length; i += 1) {
          tail[i >> 2] |= buff.charCodeAt(i) << (i % 4 << 3);
        }
        this._finish(tail, length);
        ret = hex(this._hash);
        if (raw) {
          ret = hexToBinaryString(ret);
        }
        this.reset();
        return ret;
      };
      SparkMD52.prototype.reset = function() {
        this._buff = "";
        this._length = 0;
        this._hash = [1732584193, -271733879, -1732584194, 271733878];
        return this;
      };
      SparkMD52.prototype.getState = function() {
        return {
          buff: this._buff,
          length: this._length,
          hash: this._hash.slice()
        };
      };
      SparkMD52.prototype.setState = function(state2) {
        this._buff = state2.buff;
        this._length = state2.length;
        this._hash = state2.hash;
        return this;
      };
      SparkMD52.prototype.destroy = function() {
        delete this._hash;
        delete this._buff;
        delete this._length;
      };
      SparkMD52.prototype._finish = function(tail, length) {
        var i = length, tmp, lo, hi;
        tail[i >> 2] |= 128 << (i % 4 << 3);
        if (i > 55) {
          md5cycle(this._hash, tail);
          for (i = 0; i < 16; i += 1) {
            tail[i] = 0;
          }
        }
        tmp = this._length * 8;
        tmp = tmp.toString(16).match(/(.*?)(.{0,8})$/);
        lo = parseInt(tmp[2], 16);
        hi = parseInt(tmp[1], 16) || 0;
        tail[14] = lo;
        tail[15] = hi;
        md5cycle(this._hash, tail);
      };
      SparkMD52.hash = function(str, raw) {
        return SparkMD52.hashBinary(toUtf8(str), raw);
      };
      SparkMD52.hashBinary = function(content, raw) {
        var hash2 = md51(content), ret = hex(hash2);
        return raw ? hexToBinaryString(ret) : ret;
      };
      SparkMD52.ArrayBuffer = function() {
        this.reset();
      };
      SparkMD52.ArrayBuffer.prototype.append = function(arr) {
        var buff = concatenateArrayBuffers(this._buff.buffer, arr, true), length = buff.length, i;
        this._length += arr.byteLength;
        for (i = 64; i <= length; i += 64) {
          md5cycle(this._hash, md5blk_array(buff.subarray(i - 64, i)));
        }
        this._buff = i - 64 < length ? new Uint8Array(buff.buffer.slice(i - 64)) : new Uint8Array(0);
        return this;
      };
      SparkMD52.ArrayBuffer.prototype.end = function(raw) {
        var buff = this._buff, length = buff.length, tail = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0], i, ret;
        for (i = 0; i < length; i += 1) {
          tail[i >> 2] |= buff[i] << (i % 4 << 3);
        }
        this._finish(tail, length);
        ret = hex(this._hash);
        if (raw) {
          ret = hexToBinaryString(ret);
        }
        this.reset();
        return ret;
      };
      SparkMD52.ArrayBuffer.prototype.reset = function() {
        this._buff = new Uint8Array(0);
        this._length = 0;
        this._hash = [1732584193, -271733879, -1732584194, 271733878];
        return this;
      };
      SparkMD52.ArrayBuffer.prototype.getState = function() {
        var state2 = SparkMD52.prototype.getState.call(this);
        state2.buff = arrayBuffer2Utf8Str(state2.buff);
        return state2;
      };
      SparkMD52.ArrayBuffer.prototype.setState = function(state2) {
        state2.buff = utf8Str2ArrayBuffer(state2.buff, true);
        return SparkMD52.prototype.setState.call(this, state2);
      };
      SparkMD52.ArrayBuffer.prototype.destroy = SparkMD52.prototype.destroy;
      SparkMD52.ArrayBuffer.prototype._finish = SparkMD52.prototype._finish;
      SparkMD52.ArrayBuffer.hash = function(arr, raw) {
        var hash2 = md51_array(new Uint8Array(arr)), ret = hex(hash2);
        return raw ? hexToBinaryString(ret) : ret;
      };
      return SparkMD52;
    });
  }
});

// src/frame.js
function framed(win = window) {
  try {
    return win.top !== win.self;
  } catch {
    return true;
  }
}
if (framed()) {
  const p = document.createElement("p");
  p.id = "framed";
  p.setAttribute("role", "alert");
  p.textContent = "This page refuses to run inside a frame: open it in its own tab.";
  document.body.replaceChildren(p);
  throw new Error("qo: the page is framed: it refuses to run");
}

// node_modules/aws4fetch/dist/aws4fetch.esm.mjs
var encoder = new TextEncoder();
var HOST_SERVICES = {
  appstream2: "appstream",
  cloudhsmv2: "cloudhsm",
  email: "ses",
  marketplace: "aws-marketplace",
  mobile: "AWSMobileHubService",
  pinpoint: "mobiletargeting",
  queue: "sqs",
  "git-codecommit": "codecommit",
  "mturk-requester-sandbox": "mturk-requester",
  "personalize-runtime": "personalize"
};
var UNSIGNABLE_HEADERS = /* @__PURE__ */ new Set([
  "authorization",
  "content-type",
  "content-length",
  "user-agent",
  "presigned-expires",
  "expect",
  "x-amzn-trace-id",
  "range",
  "connection"
]);
var AwsClient = class {
  constructor({ accessKeyId, secretAccessKey, sessionToken, service, region, cache, retries, initRetryMs }) {
    if (accessKeyId == null) throw new TypeError("accessKeyId is a required option");
    if (secretAccessKey == null) throw new TypeError("secretAccessKey is a required option");
    this.accessKeyId = accessKeyId;
    this.secretAccessKey = secretAccessKey;
    this.sessionToken = sessionToken;
    this.service = service;
    this.region = region;
    this.cache = cache || /* @__PURE__ */ new Map();
    this.retries = retries != null ? retries : 10;
    this.initRetryMs = initRetryMs || 50;
  }
  async sign(input, init) {
    if (input instanceof Request) {
      const { method, url, headers, body } = input;
      init = Object.assign({ method, url, headers }, init);
      if (init.body == null && headers.has("Content-Type")) {
        init.body = body != null && headers.has("X-Amz-Content-Sha256") ? body : await input.clone().arrayBuffer();
      }
      input = url;
    }
    const signer = new AwsV4Signer(Object.assign({ url: input.toString() }, init, this, init && init.aws));
    const signed = Object.assign({}, init, await signer.sign());
    delete signed.aws;
    try {
      return new Request(signed.url.toString(), signed);
    } catch (e) {
      if (e instanceof TypeError) {
        return new Request(signed.url.toString(), Object.assign({ duplex: "half" }, signed));
      }
      throw e;
    }
  }
  async fetch(input, init) {
    for (let i = 0; i <= this.retries; i++) {
      const fetched = fetch(await this.sign(input, init));
      if (i === this.retries) {
        return fetched;
      }
      const res = await fetched;
      if (res.status < 500 && res.status !== 429) {
        return res;
      }
      await new Promise((resolve) => setTimeout(resolve, Math.random() * this.initRetryMs * Math.pow(2, i)));
    }
    throw new Error("An unknown error occurred, ensure retries is not negative");
  }
};
var AwsV4Signer = class {
  constructor({ method, url, headers, body, accessKeyId, secretAccessKey, sessionToken, service, region, cache, datetime, signQuery, appendSessionToken, allHeaders, singleEncode }) {
    if (url == null) throw new TypeError("url is a required option");
    if (accessKeyId == null) throw new TypeError("accessKeyId is a required option");
    if (secretAccessKey == null) throw new TypeError("secretAccessKey is a required option");
    this.method = method || (body ? "POST" : "GET");
    this.url = new URL(url);
    this.headers = new Headers(headers || {});
    this.body = body;
    this.accessKeyId = accessKeyId;
    this.secretAccessKey = secretAccessKey;
    this.sessionToken = sessionToken;
    let guessedService, guessedRegion;
    if (!service || !region) {
      [guessedService, guessedRegion] = guessServiceRegion(this.url, this.headers);
    }
    this.service = service || guessedService || "";
    this.region = region || guessedRegion || "us-east-1";
    this.cache = cache || /* @__PURE__ */ new Map();
    this.datetime = datetime || (/* @__PURE__ */ new Date()).toISOString().replace(/[:-]|\.\d{3}/g, "");
    this.signQuery = signQuery;
    this.appendSessionToken = appendSessionToken || this.service === "iotdevicegateway";
    this.headers.delete("Host");
    if (this.service === "s3" && !this.signQuery && !this.headers.has("X-Amz-Content-Sha256")) {
      this.headers.set("X-Amz-Content-Sha256", "UNSIGNED-PAYLOAD");
    }
    const params = this.signQuery ? this.url.searchParams : this.headers;
    params.set("X-Amz-Date", this.datetime);
    if (this.sessionToken && !this.appendSessionToken) {
      params.set("X-Amz-Security-Token", this.sessionToken);
    }
    this.signableHeaders = ["host", ...this.headers.keys()].filter((header) => allHeaders || !UNSIGNABLE_HEADERS.has(header)).sort();
    this.signedHeaders = this.signableHeaders.join(";");
    this.canonicalHeaders = this.signableHeaders.map((header) => header + ":" + (header === "host" ? this.url.host : (this.headers.get(header) || "").replace(/\s+/g, " "))).join("\n");
    this.credentialString = [this.datetime.slice(0, 8), this.region, this.service, "aws4_request"].join("/");
    if (this.signQuery) {
      if (this.service === "s3" && !params.has("X-Amz-Expires")) {
        params.set("X-Amz-Expires", "86400");
      }
      params.set("X-Amz-Algorithm", "AWS4-HMAC-SHA256");
      params.set("X-Amz-Credential", this.accessKeyId + "/" + this.credentialString);
      params.set("X-Amz-SignedHeaders", this.signedHeaders);
    }
    if (this.service === "s3") {
      try {
        this.encodedPath = decodeURIComponent(this.url.pathname.replace(/\+/g, " "));
      } catch (e) {
        this.encodedPath = this.url.pathname;
      }
    } else {
      this.encodedPath = this.url.pathname.replace(/\/+/g, "/");
    }
    if (!singleEncode) {
      this.encodedPath = encodeURIComponent(this.encodedPath).replace(/%2F/g, "/");
    }
    this.encodedPath = encodeRfc3986(this.encodedPath);
    const seenKeys = /* @__PURE__ */ new Set();
    this.encodedSearch = [...this.url.searchParams].filter(([k]) => {
      if (!k) return false;
      if (this.service === "s3") {
        if (seenKeys.has(k)) return false;
        seenKeys.add(k);
      }
      return true;
    }).map((pair) => pair.map((p) => encodeRfc3986(encodeURIComponent(p)))).sort(([k1, v1], [k2, v2]) => k1 < k2 ? -1 : k1 > k2 ? 1 : v1 < v2 ? -1 : v1 > v2 ? 1 : 0).map((pair) => pair.join("=")).join("&");
  }
  async sign() {
    if (this.signQuery) {
      this.url.searchParams.set("X-Amz-Signature", await this.signature());
      if (this.sessionToken && this.appendSessionToken) {
        this.url.searchParams.set("X-Amz-Security-Token", this.sessionToken);
      }
    } else {
      this.headers.set("Authorization", await this.authHeader());
    }
    return {
      method: this.method,
      url: this.url,
      headers: this.headers,
      body: this.body
    };
  }
  async authHeader() {
    return [
      "AWS4-HMAC-SHA256 Credential=" + this.accessKeyId + "/" + this.credentialString,
      "SignedHeaders=" + this.signedHeaders,
      "Signature=" + await this.signature()
    ].join(", ");
  }
  async signature() {
    const date = this.datetime.slice(0, 8);
    const cacheKey = [this.secretAccessKey, date, this.region, this.service].join();
    let kCredentials = this.cache.get(cacheKey);
    if (!kCredentials) {
      const kDate = await hmac("AWS4" + this.secretAccessKey, date);
      const kRegion = await hmac(kDate, this.region);
      const kService = await hmac(kRegion, this.service);
      kCredentials = await hmac(kService, "aws4_request");
      this.cache.set(cacheKey, kCredentials);
    }
    return buf2hex(await hmac(kCredentials, await this.stringToSign()));
  }
  async stringToSign() {
    return [
      "AWS4-HMAC-SHA256",
      this.datetime,
      this.credentialString,
      buf2hex(await hash(await this.canonicalString()))
    ].join("\n");
  }
  async canonicalString() {
    return [
      this.method.toUpperCase(),
      this.encodedPath,
      this.encodedSearch,
      this.canonicalHeaders + "\n",
      this.signedHeaders,
      await this.hexBodyHash()
    ].join("\n");
  }
  async hexBodyHash() {
    let hashHeader = this.headers.get("X-Amz-Content-Sha256") || (this.service === "s3" && this.signQuery ? "UNSIGNED-PAYLOAD" : null);
    if (hashHeader == null) {
      if (this.body && typeof this.body !== "string" && !("byteLength" in this.body)) {
        throw new Error("body must be a string, ArrayBuffer or ArrayBufferView, unless you include the X-Amz-Content-Sha256 header");
      }
      hashHeader = buf2hex(await hash(this.body || ""));
    }
    return hashHeader;
  }
};
async function hmac(key, string) {
  const cryptoKey = await crypto.subtle.importKey(
    "raw",
    typeof key === "string" ? encoder.encode(key) : key,
    { name: "HMAC", hash: { name: "SHA-256" } },
    false,
    ["sign"]
  );
  return crypto.subtle.sign("HMAC", cryptoKey, encoder.encode(string));
}
async function hash(content) {
  return crypto.subtle.digest("SHA-256", typeof content === "string" ? encoder.encode(content) : content);
}
var HEX_CHARS = ["0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "a", "b", "c", "d", "e", "f"];
function buf2hex(arrayBuffer) {
  const buffer = new Uint8Array(arrayBuffer);
  let out = "";
  for (let idx = 0; idx < buffer.length; idx++) {
    const n = buffer[idx];
    out += HEX_CHARS[n >>> 4 & 15];
    out += HEX_CHARS[n & 15];
  }
  return out;
}
function encodeRfc3986(urlEncodedStr) {
  return urlEncodedStr.replace(/[!'()*]/g, (c) => "%" + c.charCodeAt(0).toString(16).toUpperCase());
}
function guessServiceRegion(url, headers) {
  const { hostname, pathname } = url;
  if (hostname.endsWith(".on.aws")) {
    const match2 = hostname.match(/^[^.]{1,63}\.lambda-url\.([^.]{1,63})\.on\.aws$/);
    return match2 != null ? ["lambda", match2[1] || ""] : ["", ""];
  }
  if (hostname.endsWith(".r2.cloudflarestorage.com")) {
    return ["s3", "auto"];
  }
  if (hostname.endsWith(".backblazeb2.com")) {
    const match2 = hostname.match(/^(?:[^.]{1,63}\.)?s3\.([^.]{1,63})\.backblazeb2\.com$/);
    return match2 != null ? ["s3", match2[1] || ""] : ["", ""];
  }
  const match = hostname.replace("dualstack.", "").match(/([^.]{1,63})\.(?:([^.]{0,63})\.)?amazonaws\.com(?:\.cn)?$/);
  let service = match && match[1] || "";
  let region = match && match[2];
  if (region === "us-gov") {
    region = "us-gov-west-1";
  } else if (region === "s3" || region === "s3-accelerate") {
    region = "us-east-1";
    service = "s3";
  } else if (service === "iot") {
    if (hostname.startsWith("iot.")) {
      service = "execute-api";
    } else if (hostname.startsWith("data.jobs.iot.")) {
      service = "iot-jobs-data";
    } else {
      service = pathname === "/mqtt" ? "iotdevicegateway" : "iotdata";
    }
  } else if (service === "autoscaling") {
    const targetPrefix = (headers.get("X-Amz-Target") || "").split(".")[0];
    if (targetPrefix === "AnyScaleFrontendService") {
      service = "application-autoscaling";
    } else if (targetPrefix === "AnyScaleScalingPlannerFrontendService") {
      service = "autoscaling-plans";
    }
  } else if (region == null && service.startsWith("s3-")) {
    region = service.slice(3).replace(/^fips-|^external-1/, "");
    service = "s3";
  } else if (service.endsWith("-fips")) {
    service = service.slice(0, -5);
  } else if (region && /-\d$/.test(service) && !/-\d$/.test(region)) {
    [service, region] = [region, service];
  }
  return [HOST_SERVICES[service] || service, region || ""];
}

// src/s3.js
var import_spark_md5 = __toESM(require_spark_md5(), 1);
var md5Hex = (buf) => import_spark_md5.default.ArrayBuffer.hash(buf);
var S3Error = class extends Error {
  constructor(status, code, message) {
    super(`S3 ${status} ${code}: ${message}`);
    this.status = status;
    this.code = code;
  }
};
var TORN_BACKOFF_MS = [5, 20, 80];
var md5ETag = (etag) => {
  const e = (etag ?? "").replace(/^"|"$/g, "").toLowerCase();
  return /^[0-9a-f]{32}$/.test(e) ? e : "";
};
var xmlText = (el, name) => el.getElementsByTagName(name)[0]?.textContent ?? "";
var S3 = class {
  constructor({ endpoint, bucket, region, accessKeyId, secretAccessKey, sessionToken }) {
    if (!bucket) throw new Error("no bucket given");
    this.base = `${(endpoint || `https://s3.${region || "us-east-1"}.amazonaws.com`).replace(/\/+$/, "")}/${encodeURIComponent(bucket)}`;
    this.client = new AwsClient({ accessKeyId, secretAccessKey, sessionToken, service: "s3", region: region || "us-east-1" });
    this.offset = 0;
    this.requests = {};
    this.etags = "unknown";
    this.stableMismatches = 0;
    this.sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
  }
  /** now is the server's time estimate. */
  now() {
    return new Date(Date.now() + this.offset);
  }
  /**
   * url is the address of key. The page builds keys from validated parts
   * only (queue.js); as a last guard, a key with an empty, "." or ".."
   * segment is refused here: the browser would resolve the path before
   * signing it and send the request to another key, or another bucket.
   */
  url(key, params) {
    const segs = String(key).split("/");
    if (segs.some((s2) => s2 === "" || s2 === "." || s2 === "..")) {
      throw new Error(`refused: the key ${JSON.stringify(key)} has an empty, "." or ".." segment, which the browser would resolve to another key: nothing was sent`);
    }
    const path = segs.map(encodeURIComponent).join("/");
    const qs = params ? `?${new URLSearchParams(params)}` : "";
    return `${this.base}/${path}${qs}`;
  }
  async request(method, url, { body, headers } = {}) {
    const params = new URL(url).searchParams;
    const op = method !== "GET" ? method : params.has("list-type") ? "LIST" : params.has("versions") ? "LIST-VERSIONS" : "GET";
    this.requests[op] = (this.requests[op] || 0) + 1;
    const res = await this.client.fetch(url, { method, body, headers, cache: "no-store" });
    const date = res.headers.get("Date");
    if (date) this.offset = Date.parse(date) + 500 - Date.now();
    return res;
  }
  async fail(res) {
    const text = await res.text();
    let code = res.statusText;
    let message = text.slice(0, 200);
    if (text.startsWith("<")) {
      const doc = new DOMParser().parseFromString(text, "application/xml");
      code = xmlText(doc, "Code") || code;
      message = xmlText(doc, "Message") || message;
    }
    throw new S3Error(res.status, code, message);
  }
  /** list returns one page of keys under prefix. */
  async list(prefix, { startAfter, token, maxKeys = 1e3 } = {}) {
    const params = { "list-type": "2", prefix, "max-keys": String(maxKeys) };
    if (token) params["continuation-token"] = token;
    else if (startAfter) params["start-after"] = startAfter;
    const res = await this.request("GET", `${this.base}/?${new URLSearchParams(params)}`);
    if (!res.ok) await this.fail(res);
    const doc = new DOMParser().parseFromString(await res.text(), "application/xml");
    const keys = [...doc.getElementsByTagName("Contents")].map((c) => ({
      key: xmlText(c, "Key"),
      etag: xmlText(c, "ETag"),
      lastModified: xmlText(c, "LastModified")
    }));
    const truncated = xmlText(doc, "IsTruncated") === "true";
    return { keys, next: truncated ? xmlText(doc, "NextContinuationToken") : "" };
  }
  /**
   * get returns {text, etag} or null when the key does not exist.
   *
   * The page writes back what it read with If-Match on its ETag, so the
   * ETag must be the body's: a server that answers an old body with the
   * ETag of the write that replaced it (a torn read) would let a stale
   * write win. As s3store does (store/s3store/etag.go): where the server's
   * ETags are body MD5s (learnt from the page's own PUTs, or from a read
   * that matches), a body that is not its ETag's is read again after 5, 20
   * and 80 ms, and if it does not settle get throws a 412 TornRead (a lost
   * race). Before anything is known, the same mismatch twice is a server
   * whose ETags are not MD5s: the answer is returned as it is, and after
   * two such objects reads are no longer checked.
   */
  async get(key, versionId) {
    const mode = this.etags;
    let first = null;
    let obj = null;
    for (const wait of [0, ...TORN_BACKOFF_MS]) {
      if (wait) await this.sleep(wait);
      obj = await this.getOnce(key, versionId);
      if (!obj || mode === "opaque" || this.settled(obj)) return obj && { text: obj.text, etag: obj.etag };
      if (first && mode === "unknown" && obj.etag === first.etag && obj.md5 === first.md5) {
        if (++this.stableMismatches >= 2 && this.etags === "unknown") this.etags = "opaque";
        return { text: obj.text, etag: obj.etag };
      }
      first ??= obj;
    }
    if (mode === "unknown") return { text: obj.text, etag: obj.etag };
    throw new S3Error(412, "TornRead", `${key}: the server answered a body whose MD5 ${obj.md5} is not its ETag ${obj.etag}, ${TORN_BACKOFF_MS.length + 1} times: treated as a lost race; try again`);
  }
  /** getOnce is one GET: {text, etag, md5} or null. */
  async getOnce(key, versionId) {
    const res = await this.request("GET", this.url(key, versionId ? { versionId } : void 0));
    if (res.status === 404) return null;
    if (!res.ok) await this.fail(res);
    const buf = await res.arrayBuffer();
    return { text: new TextDecoder().decode(buf), etag: res.headers.get("ETag"), md5: md5Hex(buf) };
  }
  /** settled reports whether obj's ETag is not an MD5, or is its body's. */
  settled(obj) {
    const e = md5ETag(obj.etag);
    if (!e) return true;
    if (e !== obj.md5) return false;
    if (this.etags === "unknown") this.etags = "md5";
    return true;
  }
  /** put writes body; ifMatch makes it a compare-and-swap, ifNoneMatch: '*' a create-only write. */
  async put(key, body, { ifMatch, ifNoneMatch } = {}) {
    const headers = { "Content-Type": "application/json" };
    if (ifMatch) headers["If-Match"] = ifMatch;
    if (ifNoneMatch) headers["If-None-Match"] = ifNoneMatch;
    const res = await this.request("PUT", this.url(key), { body, headers });
    if (!res.ok) await this.fail(res);
    const etag = res.headers.get("ETag");
    this.etags = md5ETag(etag) === md5Hex(new TextEncoder().encode(body ?? "").buffer) ? "md5" : "opaque";
    return etag;
  }
  async del(key) {
    const res = await this.request("DELETE", this.url(key));
    if (!res.ok && res.status !== 404) await this.fail(res);
  }
  /** versions lists every version of key, newest first. */
  async versions(key) {
    const out = [];
    let keyMarker = "";
    let versionMarker = "";
    for (; ; ) {
      const params = { versions: "", prefix: key };
      if (keyMarker) Object.assign(params, { "key-marker": keyMarker, "version-id-marker": versionMarker });
      const res = await this.request("GET", `${this.base}/?${new URLSearchParams(params)}`);
      if (!res.ok) await this.fail(res);
      const doc = new DOMParser().parseFromString(await res.text(), "application/xml");
      for (const el of [...doc.documentElement.children]) {
        if (el.tagName !== "Version" && el.tagName !== "DeleteMarker" || xmlText(el, "Key") !== key) continue;
        out.push({ versionId: xmlText(el, "VersionId"), lastModified: xmlText(el, "LastModified"), deleteMarker: el.tagName === "DeleteMarker" });
      }
      if (xmlText(doc, "IsTruncated") !== "true") return out;
      keyMarker = xmlText(doc, "NextKeyMarker");
      versionMarker = xmlText(doc, "NextVersionIdMarker");
    }
  }
};

// src/transitions.json
var transitions_default = [
  {
    from: "",
    event: "enqueued",
    to: "pending",
    by: "Submit",
    note: "create-only PUT; available_at may lie in the future"
  },
  {
    from: "",
    event: "enqueued",
    to: "waiting",
    by: "Submit",
    note: "with parents that have not all ended; no ready entry"
  },
  {
    from: "waiting",
    event: "parent_done",
    to: "waiting",
    by: "ReleaseChildren",
    note: "a parent ended (completed, or on_parent_failure run); others have not"
  },
  {
    from: "waiting",
    event: "released",
    to: "pending",
    by: "ReleaseChildren",
    note: "every parent ended (completed, or on_parent_failure run); available now"
  },
  {
    from: "waiting",
    event: "cancelled",
    to: "cancelled",
    by: "Cancel, ReleaseChildren",
    note: "an operator, or a parent that did not complete (on_parent_failure cancel)"
  },
  {
    from: "waiting",
    event: "failed",
    to: "failed",
    by: "ReleaseChildren",
    note: "a parent did not complete (on_parent_failure fail)"
  },
  {
    from: "waiting",
    event: "child_added",
    to: "waiting",
    by: "Submit",
    note: "a task submitted to run after this one"
  },
  {
    from: "pending",
    event: "child_added",
    to: "pending",
    by: "Submit",
    note: "a task submitted to run after this one"
  },
  {
    from: "running",
    event: "child_added",
    to: "running",
    by: "Submit",
    note: "a task submitted to run after this one; the holder's next write re-applies over it"
  },
  {
    from: "failed",
    event: "child_added",
    to: "failed",
    by: "Submit",
    note: "a task submitted to run after this one, so that replaying this one lets it go on"
  },
  {
    from: "cancelled",
    event: "child_added",
    to: "cancelled",
    by: "Submit",
    note: "a task submitted to run after this one, so that replaying this one lets it go on"
  },
  {
    from: "expired",
    event: "child_added",
    to: "expired",
    by: "Submit",
    note: "a task submitted to run after this one, so that replaying this one lets it go on"
  },
  {
    from: "pending",
    event: "claimed",
    to: "running",
    by: "Claim",
    note: "available_at <= now; new lease_id, attempt+1"
  },
  {
    from: "running",
    event: "lease_extended",
    to: "running",
    by: "Extend",
    note: "lease holder only"
  },
  {
    from: "running",
    event: "succeeded",
    to: "completed",
    by: "Complete",
    note: "lease holder only"
  },
  {
    from: "running",
    event: "retried",
    to: "pending",
    by: "Retry",
    note: "lease holder; retries left; available_at = now + backoff"
  },
  {
    from: "running",
    event: "failed",
    to: "failed",
    by: "Fail, Retry, Snooze",
    note: "lease holder; permanent error, retries exhausted or snoozes exhausted"
  },
  {
    from: "running",
    event: "timed_out",
    to: "pending",
    by: "ExpireLease, ReclaimLease",
    note: "lease expired or holder dead; retries left; available_at = now + backoff"
  },
  {
    from: "running",
    event: "timed_out",
    to: "failed",
    by: "ExpireLease, ReclaimLease",
    note: "lease expired or holder dead; retries exhausted"
  },
  {
    from: "running",
    event: "requeued",
    to: "pending",
    by: "Release, RequeueNow",
    note: "available now; no retry counted"
  },
  {
    from: "pending",
    event: "requeued",
    to: "pending",
    by: "RequeueNow",
    note: "a task in backoff or delayed becomes available now"
  },
  {
    from: "running",
    event: "snoozed",
    to: "pending",
    by: "Snooze",
    note: "lease holder; snoozes left; available_at = now + delay; no retry counted"
  },
  {
    from: "running",
    event: "cancel_requested",
    to: "running",
    by: "Cancel",
    note: "the worker sees it on its next lease check"
  },
  {
    from: "pending",
    event: "cancelled",
    to: "cancelled",
    by: "Cancel",
    note: "immediately"
  },
  {
    from: "running",
    event: "cancelled",
    to: "cancelled",
    by: "AckCancel, Retry, Release, Snooze, ExpireLease, ReclaimLease",
    note: "only after cancel_requested"
  },
  {
    from: "pending",
    event: "expired",
    to: "expired",
    by: "Claim, Sweep",
    note: "expires_at <= now; no further attempt starts"
  },
  {
    from: "failed",
    event: "replayed",
    to: "pending",
    by: "Replay",
    note: "retry_count reset; available now"
  },
  {
    from: "cancelled",
    event: "replayed",
    to: "pending",
    by: "Replay",
    note: "retry_count reset; available now"
  },
  {
    from: "expired",
    event: "replayed",
    to: "pending",
    by: "Replay",
    note: "expires_at cleared; available now"
  },
  {
    from: "failed",
    event: "replayed",
    to: "waiting",
    by: "Replay",
    note: "parents that did not complete are waited for again (one was replayed)"
  },
  {
    from: "cancelled",
    event: "replayed",
    to: "waiting",
    by: "Replay",
    note: "parents that did not complete are waited for again (one was replayed)"
  },
  {
    from: "completed",
    event: "archived",
    to: "archived",
    by: "Archive",
    note: ""
  },
  {
    from: "failed",
    event: "archived",
    to: "archived",
    by: "Archive",
    note: ""
  },
  {
    from: "cancelled",
    event: "archived",
    to: "archived",
    by: "Archive",
    note: ""
  },
  {
    from: "expired",
    event: "archived",
    to: "archived",
    by: "Archive",
    note: ""
  }
];

// src/constants.json
var constants_default = {
  format_version: 1,
  layout_version: 5,
  field_sep: "~",
  key_section_mark: "-",
  statuses: [
    "waiting",
    "pending",
    "running",
    "completed",
    "failed",
    "cancelled",
    "expired",
    "archived"
  ],
  terminal: [
    "completed",
    "failed",
    "cancelled",
    "expired",
    "archived"
  ],
  counted: [
    "waiting",
    "pending",
    "running",
    "failed"
  ],
  priorities: [
    "high",
    "normal",
    "low"
  ],
  priority_step_ms: 9e5,
  list_window_ms: 864e5,
  recent_minutes: 15,
  dead_after_ms: 2e4,
  max_clock_skew_ms: 2e3,
  throughput_prefix: "monitor/throughput/",
  day_hours: 24,
  index_grace_ms: 6e4,
  edge_fan_in: 16,
  keys: {
    config: "queue.json",
    control: "control.json",
    data: "data/",
    dead: "dead/",
    edges: "edges/",
    idempotency: "idempotency/",
    leases: "leases/",
    ready: "ready/",
    schedules: "schedules/",
    tasks: "tasks/",
    waiting: "waiting/",
    workers: "workers/",
    workflow_names: "workflow-names/",
    workflows: "workflows/"
  },
  workflow_ended: [
    "completed",
    "failed",
    "cancelled"
  ],
  name_max: {
    schedule_name: 64,
    task_type: 64,
    worker_id: 128,
    workflow_name: 64
  },
  operators: {
    archive: [
      "completed",
      "failed",
      "cancelled",
      "expired"
    ],
    cancel: [
      "waiting",
      "pending",
      "running"
    ],
    replay: [
      "failed",
      "cancelled",
      "expired"
    ]
  }
};

// src/queue.js
var STATUSES = constants_default.statuses;
var TERMINAL = constants_default.terminal;
var PRIORITIES = constants_default.priorities;
var PRIORITY_STEP_MS = constants_default.priority_step_ms;
var FORMAT_VERSION = constants_default.format_version;
var LAYOUT_VERSION = constants_default.layout_version;
var FIELD_SEP = constants_default.field_sep;
var KEY_SECTION_MARK = constants_default.key_section_mark;
var CONFIG_KEY = constants_default.keys.config;
var TASKS_PREFIX = constants_default.keys.tasks;
var READY_PREFIX = constants_default.keys.ready;
var LEASES_PREFIX = constants_default.keys.leases;
var DEAD_PREFIX = constants_default.keys.dead;
var WAITING_PREFIX = constants_default.keys.waiting;
var LIST_WINDOW_MS = constants_default.list_window_ms;
var WORKERS_PREFIX = constants_default.keys.workers;
var SCHEDULES_PREFIX = constants_default.keys.schedules;
var CONTROL_KEY = constants_default.keys.control;
var IDEMPOTENCY_PREFIX = constants_default.keys.idempotency;
var WORKFLOWS_PREFIX = constants_default.keys.workflows;
var WORKFLOW_NAMES_PREFIX = constants_default.keys.workflow_names;
var OPERATORS = constants_default.operators;
var WORKFLOW_ENDED = constants_default.workflow_ended;
function canAct(op, status) {
  return (OPERATORS[op] || []).includes(status);
}
var TransitionError = class extends Error {
  constructor(from, event, to, reason) {
    super(`invalid transition: ${from || "(new)"} -${event}-> ${to}: ${reason}`);
    this.name = "TransitionError";
    this.code = "invalid_transition";
  }
};
function allowed(from, event, to) {
  return transitions_default.some((t) => t.from === from && t.event === event && t.to === to);
}
function shards(shardChars) {
  const n = 16 ** shardChars;
  return Array.from({ length: n }, (_, i) => i.toString(16).padStart(shardChars, "0"));
}
var DATA_PREFIX = constants_default.keys.data;
var EDGES_PREFIX = constants_default.keys.edges;
var EDGE_FAN_IN = constants_default.edge_fan_in;
var NAME = /^[A-Za-z0-9_.:-]+$/;
var TASK_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
var LEASE_ID = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;
var SHARD = /^[0-9a-f]{1,2}$/;
var validName = (max) => (s2) => typeof s2 === "string" && s2.length >= 1 && s2.length <= max && NAME.test(s2) && /[^.]/.test(s2);
var RULES = {
  task_id: (s2) => typeof s2 === "string" && TASK_ID.test(s2),
  lease_id: (s2) => typeof s2 === "string" && LEASE_ID.test(s2),
  shard: (s2) => typeof s2 === "string" && SHARD.test(s2),
  ...Object.fromEntries(Object.entries(constants_default.name_max).map(([kind, max]) => [kind, validName(max)]))
};
var WHAT = {
  task_id: "a task id (a UUID like 0b6f4c2e-8d1a-4f7e-9c3b-2a5d6e7f8a9b)",
  lease_id: "a lease id (a UUID)",
  shard: "a shard (1 or 2 hex digits)",
  task_type: "a task type",
  worker_id: "a worker id",
  schedule_name: "a schedule name",
  workflow_name: "a workflow name"
};
function validPart(kind, value) {
  const rule = RULES[kind];
  if (!rule) throw new Error(`unknown key part ${kind}`);
  return rule(value);
}
var KeyPartError = class extends Error {
  constructor(kind, value) {
    const shown = JSON.stringify(typeof value === "string" && value.length > 80 ? `${value.slice(0, 80)}...` : value) ?? String(value);
    super(`refused: ${shown} is not ${WHAT[kind] || kind} (letters, digits and _ . : - for names), so no key is built from it: the object that holds it was not written by qo`);
    this.name = "KeyPartError";
    this.kind = kind;
  }
};
function part(kind, value) {
  if (!validPart(kind, value)) throw new KeyPartError(kind, value);
  return value;
}
function shardPart(shard, id) {
  part("task_id", id);
  if (!validPart("shard", shard) || shardOf(id, shard.length) !== shard) throw new KeyPartError("shard", shard);
  return shard;
}
function taskKey(shard, id) {
  return `${TASKS_PREFIX}${shardPart(shard, id)}/${id}.json`;
}
function workerKey(id) {
  return `${WORKERS_PREFIX}${part("worker_id", id)}.json`;
}
function parseWorkerKey(key) {
  const id = key.startsWith(WORKERS_PREFIX) && key.endsWith(".json") ? key.slice(WORKERS_PREFIX.length, -".json".length) : null;
  return id !== null && validPart("worker_id", id) ? id : null;
}
function parseScheduleKey(key) {
  const name = key.startsWith(SCHEDULES_PREFIX) && key.endsWith(".json") ? key.slice(SCHEDULES_PREFIX.length, -".json".length) : null;
  return name !== null && validPart("schedule_name", name) ? name : null;
}
function payloadKey(t, ref, what) {
  const dir = `${DATA_PREFIX}${shardPart(t.shard, t.id)}/${t.id}/`;
  const key = typeof ref?.key === "string" ? ref.key : "";
  if (what === "input" && key === `${dir}input.json`) return key;
  const lease = key.startsWith(`${dir}output-`) && key.endsWith(".json") ? key.slice(`${dir}output-`.length, -".json".length) : null;
  if (what === "output" && lease !== null && validPart("lease_id", lease)) return `${dir}output-${lease}.json`;
  throw new Error(`refused: the ${what} reference ${JSON.stringify(key)} of task ${t.id} is not ${dir}${what === "input" ? "input" : "output-{lease id}"}.json, so it is not read`);
}
async function idempotencyKey(type, key) {
  const sum = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(`${type}\0${key}`));
  const h2 = [...new Uint8Array(sum)].map((b) => b.toString(16).padStart(2, "0")).join("");
  return `${IDEMPOTENCY_PREFIX}${h2.slice(0, 2)}/${h2}.json`;
}
function isV7(id) {
  return id[14] === "7";
}
function shardOf(id, n) {
  return isV7(id) ? id.slice(-n) : id.slice(0, n);
}
function shortID(id) {
  return isV7(id) ? id.slice(-8) : id.slice(0, 8);
}
function idFloor(ms) {
  const h2 = Math.max(0, Math.floor(ms)).toString(16).padStart(12, "0");
  return `${h2.slice(0, 8)}-${h2.slice(8, 12)}-7000-8000-000000000000`;
}
var MAX_MS = 9999999999999;
function unixMS(ms) {
  return String(Math.min(Math.max(ms, 0), MAX_MS)).padStart(13, "0");
}
function priorityOf(t) {
  return PRIORITIES.includes(t.priority) ? t.priority : "normal";
}
function readyKey(t) {
  const p = priorityOf(t);
  const offset = p === "high" ? -PRIORITY_STEP_MS : p === "low" ? PRIORITY_STEP_MS : 0;
  const name = [unixMS(Date.parse(t.available_at) + offset), p, t.id].join(FIELD_SEP);
  const section = t.key ? `${KEY_SECTION_MARK}${part("task_type", t.key)}/` : "";
  return `${readyPartitionPrefix(part("task_type", t.task_type), shardPart(t.shard, t.id))}${section}${name}`;
}
function readyPartitionPrefix(type, shard) {
  return `${READY_PREFIX}${type}/${shard}/`;
}
var READY_TYPE_END = "~";
function readyShardHop(key, shard) {
  const p = key.split("/");
  if (`${p[0]}/` !== READY_PREFIX || p.length < 3 || !p[1] || !p[2] || p[2] === shard) return key;
  const next = readyPartitionPrefix(p[1], `${p[2]}/` < `${shard}/` ? shard : READY_TYPE_END);
  return next > key ? next : key;
}
function leaseKey(t) {
  const fields = [unixMS(Date.parse(t.lease_expires_at)), part("task_type", t.task_type), t.id, part("lease_id", t.lease_id), part("worker_id", t.worker_id)];
  return `${LEASES_PREFIX}${shardPart(t.shard, t.id)}/${fields.join(FIELD_SEP)}`;
}
function deadKey(t) {
  return `${DEAD_PREFIX}${unixMS(MAX_MS - Date.parse(t.completed_at))}/${shardPart(t.shard, t.id)}/${part("task_type", t.task_type)}/${t.id}`;
}
function indexKeys(t) {
  if (t.status === "waiting") return [`${WAITING_PREFIX}${shardPart(t.shard, t.id)}/${t.id}`];
  if (t.status === "pending") return [readyKey(t)];
  if (t.status === "running" && t.lease_id && t.worker_id && t.lease_expires_at) return [leaseKey(t)];
  if (t.status === "failed" && t.completed_at) return [deadKey(t)];
  return [];
}
function keyFields(key) {
  const p = key.split("/");
  const root = `${p[0]}/`;
  if (root === READY_PREFIX) {
    const keyed = p.length === 5 && p[3].startsWith(KEY_SECTION_MARK);
    const f = keyed || p.length === 4 ? p[p.length - 1].split(FIELD_SEP) : [];
    if (f.length !== 3) return [];
    return keyed ? [p[0], p[1], p[2], ...f, p[3].slice(KEY_SECTION_MARK.length)] : [p[0], p[1], p[2], ...f];
  }
  if (root !== LEASES_PREFIX) return p;
  return p.length === 3 ? [p[0], p[1], ...p[2].split(FIELD_SEP)] : [];
}
function parseIndexKey(key) {
  const parts = keyFields(key);
  const ok = (shard, id) => validPart("shard", shard) && validPart("task_id", id) && shardOf(id, shard.length) === shard ? { shard, id } : null;
  const root = `${parts[0]}/`;
  if (root === READY_PREFIX && validPart("task_type", parts[1]) && (parts.length === 6 || parts.length === 7 && validPart("task_type", parts[6]))) return ok(parts[2], parts[5]);
  if (root === LEASES_PREFIX && parts.length === 7) return ok(parts[1], parts[4]);
  if (root === DEAD_PREFIX && parts.length === 5) return ok(parts[2], parts[4]);
  if (root === WAITING_PREFIX && parts.length === 3) return ok(parts[1], parts[2]);
  return null;
}
var MAX_PROGRESS_MESSAGE = 200;
function progressOf(t, record) {
  if (!t || t.status !== "running" || !record || typeof record !== "object" || record.worker_id !== t.worker_id) return null;
  const p = record.progress?.[t.id];
  if (!p || typeof p !== "object" || p.attempt !== t.attempt) return null;
  if (typeof p.fraction !== "number" || !(p.fraction >= 0 && p.fraction <= 1)) return null;
  const message = p.message ?? "";
  if (typeof message !== "string" || new TextEncoder().encode(message).length > MAX_PROGRESS_MESSAGE || /\p{Cc}/u.test(message)) return null;
  return { attempt: p.attempt, fraction: p.fraction, message, at: typeof p.at === "string" ? p.at : null };
}
function progressText(p) {
  return `${Math.floor(p.fraction * 100)}%${p.message ? ` ${p.message}` : ""}`;
}
function decodeTask(key, text) {
  let t;
  try {
    t = JSON.parse(text);
  } catch (e) {
    throw new Error(`malformed object ${key}: ${e.message}`);
  }
  if (t === null || typeof t !== "object" || Array.isArray(t)) throw new Error(`malformed object ${key}: not a JSON object`);
  if (t.format !== FORMAT_VERSION) throw new Error(`malformed object ${key}: unknown format version ${t.format}`);
  if (typeof t.id !== "string" || !STATUSES.includes(t.status)) throw new Error(`malformed object ${key}: missing id or unknown status`);
  const bad = (what) => new Error(`malformed object ${key}: ${what}`);
  if (!validPart("task_id", t.id)) throw bad(`bad task id ${JSON.stringify(t.id)}`);
  if (!validPart("shard", t.shard) || shardOf(t.id, t.shard.length) !== t.shard) throw bad(`the object says task ${t.id} in shard ${JSON.stringify(t.shard)}`);
  if (key && key !== taskKey(t.shard, t.id)) throw bad(`the object says task ${t.id} in shard ${t.shard}`);
  if (!validPart("task_type", t.task_type)) throw bad(`bad task type ${JSON.stringify(t.task_type)}`);
  if (t.worker_id && !validPart("worker_id", t.worker_id)) throw bad(`bad worker id ${JSON.stringify(t.worker_id)}`);
  if (t.lease_id && !validPart("lease_id", t.lease_id)) throw bad(`bad lease id ${JSON.stringify(t.lease_id)}`);
  if (t.priority != null && t.priority !== "" && !PRIORITIES.includes(t.priority)) throw bad(`unknown priority ${JSON.stringify(t.priority)}`);
  if (t.key != null && t.key !== "" && !validPart("task_type", t.key)) throw bad(`bad task key ${JSON.stringify(t.key)}`);
  if (t.parents != null && !Array.isArray(t.parents)) throw bad("parents is not a list");
  if (t.children != null && !Array.isArray(t.children)) throw bad("children is not a list");
  for (const p of t.parents || []) if (!validPart("task_id", p?.id)) throw bad(`bad parent id ${JSON.stringify(p?.id)}`);
  for (const c of t.children || []) if (!validPart("task_id", c)) throw bad(`bad child id ${JSON.stringify(c)}`);
  return t;
}
var iso = (d) => new Date(d).toISOString();
function endLease(t) {
  t.lease_id = "";
  t.lease_expires_at = null;
}
function toPending(t, now) {
  t.status = "pending";
  t.available_at = now;
  clearRun(t);
}
function clearRun(t) {
  t.worker_id = "";
  endLease(t);
  t.completed_at = null;
  t.output = null;
  t.output_ref = null;
  t.cancel_requested = false;
  t.cancel_requested_at = null;
  t.cancel_reason = "";
}
function toWaiting(t) {
  t.status = "waiting";
  clearRun(t);
  t.last_error = "";
  t.retry_count = 0;
  delete t.snooze_count;
}
function toCancelled(t, now) {
  t.status = "cancelled";
  endLease(t);
  t.completed_at = now;
  t.output = null;
  t.output_ref = null;
  if (!t.cancel_requested) {
    t.cancel_requested = true;
    t.cancel_requested_at = now;
  }
}
var refusals = {
  cancel: { event: "cancelled", to: "cancelled", done: "cancelled" },
  replay: { event: "replayed", to: "pending", done: "replayed" },
  archive: { event: "archived", to: "archived", done: "archived" }
};
function sentence(words) {
  return words.length < 2 ? words.join("") : `${words.slice(0, -1).join(", ")} or ${words.at(-1)}`;
}
var changes = {
  cancel(t, now, reason) {
    if (t.status === "running") {
      if (t.cancel_requested) return "";
      t.cancel_requested = true;
      t.cancel_requested_at = now;
      t.cancel_reason = reason;
      return "cancel_requested";
    }
    toCancelled(t, now);
    t.cancel_reason = reason;
    return "cancelled";
  },
  replay(t, now) {
    if (t.expires_at && Date.parse(t.expires_at) <= Date.parse(now)) t.expires_at = null;
    t.retry_count = 0;
    delete t.snooze_count;
    for (const p of t.parents || []) {
      if (p.done !== "completed") delete p.done;
    }
    if ((t.parents || []).some((p) => !p.done)) {
      toWaiting(t);
      return "replayed";
    }
    toPending(t, now);
    return "replayed";
  },
  archive(t) {
    t.archived_from = t.status;
    t.status = "archived";
    return "archived";
  }
};
function applyOperator(base, op, reason, actor, now, requestID) {
  const change = changes[op];
  if (!change || !OPERATORS[op]) throw new Error(`unknown action ${op}`);
  if (!canAct(op, base.status)) {
    const { event: event2, to, done } = refusals[op];
    throw new TransitionError(base.status, event2, to, `only ${sentence(OPERATORS[op])} tasks can be ${done}`);
  }
  const next = structuredClone(base);
  const at = iso(now);
  const event = change(next, at, reason);
  if (!event) return null;
  return stamp(base, next, event, at, requestID, actor);
}
function pageActor(accessKeyId, host) {
  const key = String(accessKeyId || "");
  const short2 = key.length > 8 ? `${key.slice(0, 4)}\u2026${key.slice(-4)}` : "\u2026";
  return `web UI${host ? ` on ${host}` : ""}, S3 key ${short2}`.replace(/\s+/g, " ");
}
function stamp(base, next, event, at, requestID, actor = "") {
  if (actor) next.actor = actor;
  else delete next.actor;
  next.rev = base.rev + 1;
  next.request_id = requestID;
  next.last_event = event;
  next.updated_at = Date.parse(at) < Date.parse(base.updated_at) ? base.updated_at : at;
  if (!allowed(base.status, event, next.status)) {
    throw new TransitionError(base.status, event, next.status, "not in the lifecycle table");
  }
  return next;
}
function endedAs(t) {
  switch (t.status) {
    case "completed":
    case "failed":
    case "cancelled":
    case "expired":
      return t.status;
    case "archived":
      if (t.cancel_requested) return "cancelled";
      if (t.last_error) return "failed";
      if (t.expires_at && t.completed_at && Date.parse(t.completed_at) >= Date.parse(t.expires_at) && t.output == null && t.output_ref == null) return "expired";
      return "completed";
    default:
      return null;
  }
}
function parentReason(p) {
  return `parent ${p.id} ${p.done}`;
}
function blockedBy(t) {
  if (t.on_parent_failure === "run") return null;
  return (t.parents || []).find((p) => p.done && p.done !== "completed") || null;
}
function resolveWaiting(t, at) {
  const bad = blockedBy(t);
  if (bad) {
    if (t.on_parent_failure === "fail") {
      t.status = "failed";
      t.completed_at = at;
      t.last_error = parentReason(bad);
      return "failed";
    }
    toCancelled(t, at);
    t.cancel_reason = parentReason(bad);
    return "cancelled";
  }
  if ((t.parents || []).every((p) => p.done)) {
    t.status = "pending";
    if (Date.parse(t.available_at) < Date.parse(at)) t.available_at = at;
    return "released";
  }
  return "parent_done";
}
function recordEnds(base, ends, now, requestID) {
  if (base.status !== "waiting") return null;
  const next = structuredClone(base);
  let recorded = 0;
  for (const p of next.parents || []) {
    if (p.done || !Object.hasOwn(ends, p.id)) continue;
    if (ends[p.id] === "completed" && Object.values(base.input_from || {}).some((src) => src?.parent === p.id)) {
      throw new Error(`task ${base.id} takes values from parent ${p.id} (input_from): left to qo's sweeper, which copies them`);
    }
    p.done = ends[p.id];
    recorded++;
  }
  if (!recorded) return null;
  const at = iso(now);
  return stamp(base, next, resolveWaiting(next, at), at, requestID);
}
function hasEdges(t) {
  return (t.parents || []).length > EDGE_FAN_IN;
}
function decides(t, ends) {
  const parents = (t.parents || []).map((p) => p.done || !Object.hasOwn(ends, p.id) ? p : { ...p, done: ends[p.id] });
  return Boolean(blockedBy({ ...t, parents })) || parents.every((p) => p.done);
}
function unrecorded(t, ends) {
  const out = {};
  for (const p of t.parents || []) {
    if (!p.done && Object.hasOwn(ends, p.id)) out[p.id] = ends[p.id];
  }
  return out;
}
function edgeKey(child, parent, status) {
  return `${EDGES_PREFIX}${child}/${parent}/${status}`;
}
function parseEdgeKey(key) {
  if (!key.startsWith(EDGES_PREFIX)) return null;
  const parts = key.slice(EDGES_PREFIX.length).split("/");
  if (parts.length !== 3 || !validPart("task_id", parts[0]) || !validPart("task_id", parts[1])) return null;
  if (endedAs({ status: parts[2] }) !== parts[2]) return null;
  return { child: parts[0], parent: parts[1], status: parts[2] };
}
function rewait(base, parentID, now, requestID) {
  if (base.status !== "cancelled" && base.status !== "failed") return null;
  const i = (base.parents || []).findIndex((p2) => p2.id === parentID);
  if (i < 0) return null;
  const p = base.parents[i];
  if (!p.done || p.done === "completed") return null;
  const reason = `parent ${p.id} ${p.done}`;
  if (base.cancel_reason !== reason && base.last_error !== reason) return null;
  const next = structuredClone(base);
  delete next.parents[i].done;
  if (blockedBy(next)) return null;
  toWaiting(next);
  return stamp(base, next, "replayed", iso(now), requestID);
}
function indexChanges(prev, next) {
  const had = indexKeys(prev);
  const want = indexKeys(next);
  return { put: want.filter((k) => !had.includes(k)), del: had.filter((k) => !want.includes(k)) };
}
var INDEX_GRACE_MS = constants_default.index_grace_ms;
var DEAD_AFTER_MS = constants_default.dead_after_ms;
var MAX_CLOCK_SKEW_MS = constants_default.max_clock_skew_ms;
function health(lastHeartbeat, now, deadAfterSeconds = 0) {
  const age = Date.parse(now) - Date.parse(lastHeartbeat);
  const bound = deadAfterSeconds > 0 ? deadAfterSeconds * 1e3 : DEAD_AFTER_MS;
  if (age > bound + MAX_CLOCK_SKEW_MS) return "dead";
  if (age > bound * 3 / 4) return "stale";
  return "active";
}
function unserved(byType, workers2, control, now) {
  const served = /* @__PURE__ */ new Set();
  for (const w of workers2) {
    if (health(w.last_heartbeat, now, w.dead_after_seconds) === "dead") continue;
    for (const t of w.types || []) served.add(t);
  }
  const out = [];
  for (const type of Object.keys(byType).sort()) {
    const pending = byType[type].pending || 0;
    if (!pending) continue;
    let reason = "";
    if (control?.paused) reason = "queue paused";
    else if (control?.paused_types && Object.hasOwn(control.paused_types, type)) reason = "type paused";
    else if (!served.has(type)) reason = "no live worker serves it";
    if (reason) out.push({ type, pending, reason });
  }
  return out;
}
function validType(s2) {
  return validPart("task_type", s2);
}
var HEX_SHARD = /^[0-9a-f]{1,2}$/;
var UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
var MS = /^\d{13}$/;
function indexEntry(key) {
  const p = keyFields(key);
  const ok = (index, shard, type, id, extra) => HEX_SHARD.test(shard) && validType(type) && UUID.test(id) && shardOf(id, shard.length) === shard ? { index, shard, type, id, ...extra } : null;
  const root = `${p[0]}/`;
  const keyed = p.length === 7 && validType(p[6]);
  if (root === READY_PREFIX && (p.length === 6 || keyed) && MS.test(p[3]) && PRIORITIES.includes(p[4])) {
    const offset = p[4] === "high" ? -PRIORITY_STEP_MS : p[4] === "low" ? PRIORITY_STEP_MS : 0;
    return ok("ready", p[2], p[1], p[5], { availableAt: Number(p[3]) - offset, ...keyed ? { key: p[6] } : {} });
  }
  if (root === LEASES_PREFIX && p.length === 7 && MS.test(p[2])) return ok("leases", p[1], p[3], p[4]);
  if (root === DEAD_PREFIX && p.length === 5 && MS.test(p[1])) return ok("dead", p[2], p[3], p[4]);
  if (root === WAITING_PREFIX && p.length === 3 && HEX_SHARD.test(p[1]) && UUID.test(p[2]) && shardOf(p[2], p[1].length) === p[1]) {
    return { index: "waiting", shard: p[1], type: "", id: p[2] };
  }
  return null;
}
var THROUGHPUT_PREFIX = constants_default.throughput_prefix;
var DAY_HOURS = constants_default.day_hours;
var MINUTE = 6e4;
var HOUR = 60 * MINUTE;
function throughputKey(ms) {
  return `${THROUGHPUT_PREFIX}${new Date(ms).toISOString().slice(0, 13)}.json`;
}
function throughputOf(hours, workers2, nowMs, recentMinutes = RECENT_MINUTES) {
  const per = /* @__PURE__ */ new Map();
  const total = /* @__PURE__ */ new Map();
  const closed = /* @__PURE__ */ new Set();
  const add2 = (at, c) => {
    const t = total.get(at) || { completed: 0, failed: 0 };
    t.completed += c.completed || 0;
    t.failed += c.failed || 0;
    total.set(at, t);
  };
  for (const h2 of hours) {
    for (const m of h2.minutes || []) {
      const at = Date.parse(m.start);
      if (!m.workers) {
        closed.add(at);
        add2(at, m);
        continue;
      }
      for (const [id, c] of Object.entries(m.workers)) per.set(`${id} ${at}`, { at, completed: c.completed || 0, failed: c.failed || 0 });
    }
  }
  for (const w of workers2) {
    for (const m of w.recent || []) {
      const at = Date.parse(m.start) - Date.parse(m.start) % MINUTE;
      const k = `${w.worker_id} ${at}`;
      const old = per.get(k) || { at, completed: 0, failed: 0 };
      per.set(k, { at, completed: Math.max(old.completed, m.completed || 0), failed: Math.max(old.failed, m.failed || 0) });
    }
  }
  for (const c of per.values()) if (!closed.has(c.at)) add2(c.at, c);
  const series = (step, n) => {
    const first = nowMs - nowMs % step - (n - 1) * step;
    const out = Array.from({ length: n }, (_, i) => ({ start: new Date(first + i * step).toISOString(), completed: 0, failed: 0 }));
    for (const [at, c] of total) {
      const i = Math.floor((at - first) / step);
      if (at < first || i >= n) continue;
      out[i].completed += c.completed;
      out[i].failed += c.failed;
    }
    return out;
  };
  return { recent: series(MINUTE, recentMinutes), last_hour: series(MINUTE, 60), last_day: series(HOUR, DAY_HOURS) };
}
var COUNTED = constants_default.counted;
var RECENT_MINUTES = constants_default.recent_minutes;
function countStats({ ready = [], leases = [], dead = [], waiting = [], workers: workers2 = [], malformed = [], partial = false, now, minutes = RECENT_MINUTES, control = null, meter = null, hours = [] }) {
  const nowMs = now.getTime();
  const st = {
    at: now.toISOString(),
    total: 0,
    by_status: Object.fromEntries(COUNTED.map((s2) => [s2, 0])),
    counted: [...COUNTED],
    by_shard: {},
    by_type: {},
    delayed: 0,
    oldest_pending_age_seconds: 0,
    oldest_pending_age_seconds_by_type: {},
    recent: [],
    partial,
    malformed,
    workers: { active: 0, stale: 0, dead: 0 },
    worker_requests: {},
    unserved: [],
    request_rate: null
  };
  const bump = (m, k, status) => {
    m[k] ??= {};
    m[k][status] = (m[k][status] || 0) + 1;
  };
  const oldest = {};
  let oldestAll = Infinity;
  const add2 = (status, keys) => {
    for (const key of keys) {
      const e = indexEntry(key);
      if (!e) continue;
      st.total++;
      st.by_status[status]++;
      bump(st.by_shard, e.shard, status);
      if (status === "waiting") continue;
      bump(st.by_type, e.type, status);
      if (status !== "pending") continue;
      if (e.availableAt > nowMs) {
        st.delayed++;
        continue;
      }
      oldestAll = Math.min(oldestAll, e.availableAt);
      oldest[e.type] = Math.min(oldest[e.type] ?? Infinity, e.availableAt);
    }
  };
  add2("pending", ready);
  add2("running", leases);
  add2("waiting", waiting);
  add2("failed", dead);
  if (oldestAll < Infinity) st.oldest_pending_age_seconds = (nowMs - oldestAll) / 1e3;
  for (const [type, at] of Object.entries(oldest)) st.oldest_pending_age_seconds_by_type[type] = (nowMs - at) / 1e3;
  for (const w of workers2) {
    st.workers[health(w.last_heartbeat, st.at, w.dead_after_seconds)]++;
    if (w.s3_requests) st.worker_requests[w.worker_id] = w.s3_requests;
  }
  const t = throughputOf(hours, workers2, nowMs, minutes);
  st.recent = t.recent;
  st.last_hour = t.last_hour;
  st.last_day = t.last_day;
  st.unserved = unserved(st.by_type, workers2, control, st.at);
  if (meter) st.request_rate = meter.observe(workers2, st.at);
  return st;
}
function applyControl(base, op, type, reason, now, actor = "") {
  if (base && base.format !== FORMAT_VERSION) throw new Error(`control.json has format ${base.format}; this page writes format ${FORMAT_VERSION}`);
  if (type && !validType(type)) throw new Error(`${op}: bad task type ${JSON.stringify(type)}`);
  const c = structuredClone(base || { format: FORMAT_VERSION, paused: false, paused_at: null, reason: "", paused_types: null, rev: 0 });
  const types = { ...c.paused_types || {} };
  if (op === "pause" && !type) {
    if (c.paused) return null;
    Object.assign(c, { paused: true, paused_at: now, reason });
  } else if (op === "pause") {
    if (Object.hasOwn(types, type)) return null;
    types[type] = { at: now, reason };
  } else if (op === "resume" && !type) {
    if (!c.paused) return null;
    Object.assign(c, { paused: false, paused_at: null, reason: "" });
  } else if (op === "resume") {
    if (!Object.hasOwn(types, type)) return null;
    delete types[type];
  } else {
    throw new Error(`unknown action ${op}`);
  }
  c.paused_types = types;
  c.format = FORMAT_VERSION;
  c.rev = (c.rev || 0) + 1;
  c.updated_at = now;
  if (actor) c.actor = actor;
  else delete c.actor;
  return c;
}
function limitText(l) {
  if (!l || typeof l !== "object") return "";
  const whole = (n) => Number.isInteger(n) && n > 0;
  const parts = [];
  if (whole(l.concurrency)) parts.push(`at most ${l.concurrency} running`);
  if (whole(l.rate) && (l.per === "s" || l.per === "m")) {
    parts.push(`${l.rate}/${l.per}${whole(l.burst) ? ` (burst ${l.burst})` : ""}`);
  }
  return parts.join(", ");
}
function limitsText(fleet, perKey) {
  const keyed = limitText(perKey);
  return [limitText(fleet), keyed && `per key: ${keyed}`].filter(Boolean).join("; ");
}

// src/workflow.js
function workflowKey(id, shardChars) {
  return `${WORKFLOWS_PREFIX}${shardOf(part("task_id", id), shardChars)}/${id}.json`;
}
function workflowNameKey(name) {
  return `${WORKFLOW_NAMES_PREFIX}${part("workflow_name", name)}.json`;
}
function parseWorkflowNameKey(key) {
  const name = key.startsWith(WORKFLOW_NAMES_PREFIX) && key.endsWith(".json") ? key.slice(WORKFLOW_NAMES_PREFIX.length, -".json".length) : null;
  return name !== null && validPart("workflow_name", name) ? name : null;
}
var UUID2 = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
function isWorkflowID(ref) {
  return UUID2.test(String(ref).toLowerCase());
}
function parse(key, text, what) {
  let v;
  try {
    v = JSON.parse(text);
  } catch (e) {
    throw new Error(`malformed object ${key}: ${e.message}`);
  }
  if (v === null || typeof v !== "object" || Array.isArray(v)) throw new Error(`malformed object ${key}: not ${what}`);
  return v;
}
function decodeWorkflow(key, text) {
  const w = parse(key, text, "a workflow record");
  if (w.format !== FORMAT_VERSION || typeof w.id !== "string" || !Array.isArray(w.steps) || w.steps.length === 0) {
    throw new Error(`malformed object ${key}: not a workflow record`);
  }
  if (!validPart("task_id", w.id)) throw new Error(`malformed object ${key}: bad workflow id ${JSON.stringify(w.id)}`);
  if (w.name && !validPart("workflow_name", w.name)) throw new Error(`malformed object ${key}: bad workflow name ${JSON.stringify(w.name)}`);
  for (const s2 of w.steps) {
    if (!s2 || typeof s2.name !== "string" || typeof s2.task_id !== "string") throw new Error(`malformed object ${key}: a step without name or task id`);
  }
  return w;
}
function decodeWorkflowName(key, text) {
  const n = parse(key, text, "a workflow name");
  if (!validPart("task_id", n.workflow_id)) throw new Error(`malformed object ${key}: no workflow id, or a bad one`);
  return n.workflow_id;
}
function depths(steps) {
  const idx = new Map(steps.map((s2, i) => [s2.name, i]));
  const depth = steps.map(() => 0);
  const state2 = steps.map(() => 0);
  const visit = (i) => {
    if (state2[i] !== 0) return depth[i];
    state2[i] = 1;
    for (const a of steps[i].after || []) {
      const j = idx.get(a);
      if (j !== void 0) depth[i] = Math.max(depth[i], visit(j) + 1);
    }
    state2[i] = 2;
    return depth[i];
  };
  steps.forEach((_, i) => visit(i));
  return depth;
}
function report(w, tasks2, problems = {}) {
  const counts = {};
  let missing = 0;
  let running = 0;
  let failed = 0;
  let cancelled = 0;
  let endedAt = null;
  for (const t of tasks2) {
    if (!t) {
      missing++;
      continue;
    }
    counts[t.status] = (counts[t.status] || 0) + 1;
    const st = endedAs(t);
    if (!st) running++;
    else if (st === "failed" || st === "expired") failed++;
    else if (st === "cancelled") cancelled++;
    if (st && t.completed_at && (!endedAt || Date.parse(t.completed_at) > Date.parse(endedAt))) endedAt = t.completed_at;
  }
  let status = "completed";
  if (missing) status = "incomplete";
  else if (running) status = "running";
  else if (failed) status = "failed";
  else if (cancelled) status = "cancelled";
  const depth = depths(w.steps);
  const steps = w.steps.map((s2, i) => {
    const t = tasks2[i];
    const r = {
      name: s2.name,
      task_type: s2.task_type,
      task_id: s2.task_id,
      after: s2.after || [],
      depth: depth[i],
      status: t ? t.status : "",
      attempt: t ? t.attempt : 0,
      updated_at: t ? t.updated_at : null,
      completed_at: t ? t.completed_at : null
    };
    if (t && t.status === "waiting") {
      const left = (t.parents || []).filter((p) => !p.done).length;
      r.waiting_for = `${left} of ${(t.parents || []).length} parents`;
    }
    if (t && t.last_error) r.last_error = t.last_error;
    if (t && t.cancel_reason) r.cancel_reason = t.cancel_reason;
    if (problems[s2.name]) r.problem = problems[s2.name];
    return r;
  });
  steps.sort((a, b) => a.depth - b.depth);
  const out = {
    id: w.id,
    name: w.name,
    idempotency_key: w.idempotency_key,
    status,
    created_at: w.created_at,
    ended_at: WORKFLOW_ENDED.includes(status) ? endedAt : null,
    counts,
    steps
  };
  if (!out.name) delete out.name;
  return out;
}
function stepActions(step) {
  return canAct("replay", step.status) ? ["replay"] : [];
}
function layout(rep, { nodeW = 168, nodeH = 44, gapX = 56, gapY = 14, pad = 8 } = {}) {
  const columns = [];
  for (const s2 of rep.steps) (columns[s2.depth] ||= []).push(s2);
  const at = /* @__PURE__ */ new Map();
  const nodes = [];
  columns.forEach((col, d) => {
    (col || []).forEach((s2, row) => {
      const n = { step: s2, x: pad + d * (nodeW + gapX), y: pad + row * (nodeH + gapY) };
      nodes.push(n);
      at.set(s2.name, n);
    });
  });
  const edges = [];
  for (const n of nodes) {
    for (const a of n.step.after) {
      const p = at.get(a);
      if (!p) continue;
      edges.push({ from: a, to: n.step.name, x1: p.x + nodeW, y1: p.y + nodeH / 2, x2: n.x, y2: n.y + nodeH / 2 });
    }
  }
  const rows = Math.max(0, ...columns.map((c) => c ? c.length : 0));
  return {
    width: pad * 2 + columns.length * nodeW + Math.max(0, columns.length - 1) * gapX,
    height: pad * 2 + rows * nodeH + Math.max(0, rows - 1) * gapY,
    nodeW,
    nodeH,
    nodes,
    edges
  };
}

// src/search.js
var SEARCH_LIMIT = 20;
var TYPE_SCAN_PAGES = 10;
var RESOLVE_PAGES = 4;
var SEARCH_HELP = "an id, the short id a list shows, type:NAME, or key:TYPE/KEY";
function idPrefix(text) {
  const hex = String(text).trim().toLowerCase().replace(/-/g, "");
  if (!/^[0-9a-f]{1,32}$/.test(hex)) return null;
  let prefix = "";
  for (let i = 0; i < hex.length; i++) prefix += ([8, 12, 16, 20].includes(i) ? "-" : "") + hex[i];
  return { prefix, hex };
}
function idSuffix(hex) {
  const start2 = 32 - hex.length;
  let out = "";
  for (let i = start2; i < 32; i++) out += (i > start2 && [8, 12, 16, 20].includes(i) ? "-" : "") + hex[i - start2];
  return out;
}
function parseSearch(input) {
  const text = String(input ?? "").trim();
  if (!text) return { error: `Search for ${SEARCH_HELP}.` };
  const m = /^(id|type|key):(.*)$/is.exec(text);
  const kind = m ? m[1].toLowerCase() : "";
  const rest = m ? m[2] : text;
  if (kind === "key") {
    const slash = rest.indexOf("/");
    const type2 = slash < 0 ? "" : rest.slice(0, slash).trim();
    const key = slash < 0 ? "" : rest.slice(slash + 1);
    if (!validType(type2) || !key) return { error: "key: write key:TYPE/KEY, the task type the key was submitted with, a slash, then the key." };
    if (new TextEncoder().encode(key).length > 256) return { error: "key: an idempotency key is at most 256 bytes." };
    return { kind: "key", type: type2, key, text: `key:${type2}/${key}` };
  }
  const id = kind === "type" ? null : idPrefix(rest);
  if (id) return { kind: "id", prefix: id.prefix, full: id.hex.length === 32, text: id.prefix };
  if (kind === "id" || !kind && /^[0-9a-f-]+$/i.test(rest.trim())) return { error: "id: write a task id or its first hex digits (dashes optional)." };
  const type = rest.trim();
  if (validType(type)) return { kind: "type", type, text: `type:${type}` };
  return { error: `Not something the page can search for: write ${SEARCH_HELP}.` };
}
function idShards(prefix, shards2) {
  const n = shards2[0]?.length || 1;
  const hex = prefix.replace(/-/g, "");
  if (hex.length === 32) return [hex[12] === "7" ? hex.slice(-n) : hex.slice(0, n)];
  if (hex.length >= 13 && hex[12] !== "7") return [hex.slice(0, n)];
  return shards2;
}
function searchCost(q, mode, shards2) {
  const api = mode === "API";
  if (q.kind === "id" && q.full) return api ? "1 request to qo serve (it makes 1 GET)" : "1 GET";
  if (q.kind === "id") {
    const n = idShards(q.prefix, shards2).length;
    const s32 = `${n} LIST${n === 1 ? "" : ` (one per shard)`} + 1 GET per task shown (at most ${SEARCH_LIMIT}); when no id starts with it, 5 LIST for the ids ending with it (the short ids of the lists)`;
    return api ? `1 request to qo serve (it makes ${s32})` : s32;
  }
  if (q.kind === "key") return api ? "1 request to qo serve (it makes 2 GET)" : "2 GET (the key's marker, then its task)";
  const s3 = `1 LIST per 1,000 entries of the ready, lease and dead-letter indexes passed (at most ${TYPE_SCAN_PAGES} each; usually 3 in all) + 1 GET per task shown (at most ${SEARCH_LIMIT} per status)`;
  return api ? `3 requests to qo serve (it makes ${s3})` : s3;
}
function searchNote(q, found) {
  if (q.kind === "type") return "Pending, running and failed tasks only: finished and waiting tasks are not found by type (their keys do not name it; finding them would mean reading every task).";
  if (q.kind === "id" && !q.full && !found) {
    return "No task starts with it, and none of the last 24 hours, live or among the newest dead letters, ends with it: paste the full id for an older task.";
  }
  return "";
}

// src/fleet.js
var S3_STANDARD = { put: 5e-3, get: 4e-4, del: 0 };
function per1000(op, prices = S3_STANDARD) {
  if (op === "GET" || op === "HEAD") return prices.get;
  if (op === "DELETE") return prices.del;
  return prices.put;
}
function byOp(counts) {
  const out = {};
  for (const part2 of [counts?.ok, counts?.failed]) {
    for (const [op, n] of Object.entries(part2 || {})) out[op] = (out[op] || 0) + n;
  }
  return out;
}
function cost(ops, prices = S3_STANDARD) {
  return Object.entries(ops).reduce((sum, [op, n]) => sum + n * per1000(op, prices) / 1e3, 0);
}
var RateMeter = class {
  constructor(prices = S3_STANDARD) {
    this.prices = prices;
    this.workers = /* @__PURE__ */ new Map();
  }
  observe(records, now) {
    const seen = /* @__PURE__ */ new Set();
    const r = { per_second: 0, dollars_per_hour: 0, by_op: {}, workers: 0, waiting: 0 };
    let costPerSec = 0;
    for (const w of records) {
      if (!w.s3_requests) continue;
      seen.add(w.worker_id);
      const at = Date.parse(w.last_heartbeat);
      const cur = byOp(w.s3_requests);
      let b = this.workers.get(w.worker_id);
      if (!b) {
        b = { cur, at, prev: null, prevAt: 0 };
        this.workers.set(w.worker_id, b);
      } else if (at > b.at) {
        b.prev = b.cur;
        b.prevAt = b.at;
        b.cur = cur;
        b.at = at;
        if (Object.keys(b.prev).some((op) => (cur[op] || 0) < b.prev[op])) b.prev = null;
      }
      if (health(w.last_heartbeat, now, w.dead_after_seconds) === "dead") continue;
      if (!b.prev) {
        r.waiting++;
        continue;
      }
      const secs = (b.at - b.prevAt) / 1e3;
      const delta = {};
      for (const [op, n] of Object.entries(b.cur)) {
        const d = n - (b.prev[op] || 0);
        if (!d) continue;
        delta[op] = d;
        r.by_op[op] = (r.by_op[op] || 0) + d / secs;
        r.per_second += d / secs;
      }
      costPerSec += cost(delta, this.prices) / secs;
      r.workers++;
    }
    for (const id of [...this.workers.keys()]) if (!seen.has(id)) this.workers.delete(id);
    if (!r.workers) return null;
    r.dollars_per_hour = costPerSec * 3600;
    return r;
  }
};
function dollars(v) {
  if (v === 0) return "$0";
  if (v < 0.01) return `$${v.toFixed(4)}`;
  if (v < 100) return `$${v.toFixed(2)}`;
  return `$${Math.round(v).toLocaleString("en-US")}`;
}
var HOLD_KINDS = [["rate:", 1, "/m of its rate"], ["keyrate:", 3, "/m of its per-key rate"], ["key:", 2, " of its per-key cap"]];
function holdsText(holds) {
  const parsed = Object.entries(holds || {}).map(([k, n]) => {
    for (const [prefix, rank, what] of HOLD_KINDS) {
      if (k.startsWith(prefix)) return { typ: k.slice(prefix.length), rank, text: `${n}${what}` };
    }
    return { typ: k, rank: 0, text: `${n} of its cap` };
  });
  parsed.sort((a, b) => a.typ < b.typ ? -1 : a.typ > b.typ ? 1 : a.rank - b.rank);
  return parsed.map((p) => `${p.typ} ${p.text}`).join(", ");
}

// src/bulk.js
var BULK_OPS = ["replay", "archive", "cancel"];
var BULK_CONCURRENCY = 4;
var BULK_SCAN_PAGES = 10;
var BULK_FILTER_PAGES = 40;
var BULK_MAX_IDS = 2e4;
function serverPlan(op, req, ans) {
  const items = (ans.done || []).map((id) => ({ id }));
  const server = items.length <= BULK_MAX_IDS ? { ids: items.map((i) => i.id) } : req;
  return {
    op,
    mode: "API",
    items,
    server,
    skipped: (ans.skipped || []).map((s2) => ({ id: s2.id, reason: s2.reason })),
    summary: `1 POST to qo serve, which plans: ${ans.plan}`,
    dollars: dollars(ans.dollars || 0),
    partial: Boolean(ans.partial)
  };
}
function deadEntryTask(entry) {
  const ms = MAX_MS - Number(entry.key.split("/")[1]);
  const at = new Date(ms).toISOString();
  return {
    format: FORMAT_VERSION,
    id: entry.id,
    shard: entry.shard,
    task_type: entry.type,
    status: "failed",
    priority: "normal",
    available_at: at,
    created_at: at,
    updated_at: at,
    completed_at: at,
    rev: 1,
    worker_id: "",
    lease_id: "",
    lease_expires_at: null
  };
}
function actionRequests(task, op, mode, now) {
  const next = applyOperator(task, op, "from the web UI", "", now, "plan");
  if (!next) return null;
  const idx = indexChanges(task, next);
  const s3 = { GET: 1, PUT: idx.put.length + 1, DELETE: idx.del.length };
  return mode === "API" ? { api: { POST: 1 }, s3 } : { s3 };
}
var add = (sum, ops) => {
  for (const [op, n] of Object.entries(ops || {})) sum[op] = (sum[op] || 0) + n;
  return sum;
};
function formatOps(ops) {
  const order = ["POST", "LIST", "GET", "PUT", "DELETE"];
  const parts = Object.entries(ops).filter(([, n]) => n > 0).sort(([a], [b]) => (order.indexOf(a) + 1 || 99) - (order.indexOf(b) + 1 || 99));
  return parts.length ? parts.map(([op, n]) => `${n} ${op}`).join(" + ") : "no request";
}
function planBulk({ op, mode, candidates, now, found = null, partial = false }) {
  if (!BULK_OPS.includes(op)) throw new Error(`unknown bulk action ${op}`);
  const items = [];
  const skipped = [];
  const seen = /* @__PURE__ */ new Set();
  const s3 = {};
  const api = {};
  for (const t of candidates) {
    if (seen.has(t.id)) {
      skipped.push({ id: t.id, reason: "listed twice: acted on once" });
      continue;
    }
    seen.add(t.id);
    let req;
    try {
      req = actionRequests(t, op, mode, now);
    } catch (e) {
      if (!(e instanceof TransitionError)) throw e;
      skipped.push({ id: t.id, reason: `it is ${t.status}: ${e.message.replace(/^.*: /, "")}` });
      continue;
    }
    if (!req) {
      skipped.push({ id: t.id, reason: `${op} would change nothing` });
      continue;
    }
    items.push({ id: t.id, shard: t.shard, type: t.task_type });
    add(s3, req.s3);
    add(api, req.api);
  }
  const n = items.length;
  const tasks2 = `${n} task${n === 1 ? "" : "s"}`;
  let summary = mode === "API" ? `${op} ${tasks2}: ${formatOps(api)} to qo serve, which makes ${formatOps(s3)}` : `${op} ${tasks2}: ${formatOps(s3)}`;
  const total = add(add({}, s3), found?.s3);
  if (found) {
    const how = mode === "API" ? `${formatOps(found.api)} to qo serve (it made ${formatOps(found.s3)}${found.note ? ` ${found.note}` : ""})` : formatOps(found.s3);
    summary += `; finding them took ${how}${partial ? ", and stopped before the end of the dead letters" : ""}`;
  }
  return { op, mode, items, skipped, s3, api, summary, dollars: dollars(cost(total)), perTask: n ? { ...s3 } : {} };
}
function describeFailure(err) {
  const msg = String(err?.message ?? err);
  const m = /invalid transition:? (\w+) -/.exec(msg);
  if (err?.code === "invalid_transition" || m) return `changed meanwhile${m ? ` (now ${m[1]})` : ""}: left as it is (${msg})`;
  return msg;
}
async function runBulk(items, act2, { concurrency = BULK_CONCURRENCY, onProgress = () => {
}, shouldStop = () => false } = {}) {
  const progress = { total: items.length, done: 0, ok: 0, failed: [], stopped: false, notStarted: 0 };
  let next = 0;
  const lane = async () => {
    while (next < items.length) {
      if (shouldStop()) {
        progress.stopped = true;
        return;
      }
      const item = items[next++];
      try {
        await act2(item);
        progress.ok++;
      } catch (e) {
        progress.failed.push({ id: item.id, error: describeFailure(e) });
      }
      progress.done++;
      onProgress(progress);
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(concurrency, items.length)) }, lane));
  progress.notStarted = items.length - next;
  if (progress.notStarted > 0) progress.stopped = true;
  return progress;
}

// src/backend.js
var PAGE = 50;
var MAX_INDEX_PAGES = 10;
var INDEX_OF = { pending: READY_PREFIX, running: LEASES_PREFIX, failed: DEAD_PREFIX };
var INDEXED = Object.keys(INDEX_OF);
var SEARCHED = INDEXED;
var ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
var WORKFLOW_CONCURRENCY = 16;
var WORKFLOW_NAMES_LIMIT = 1e3;
var MAX_PUT_ATTEMPTS = 3;
var MAX_REBASES = 8;
var EDGE_MS = 2 * 60 * 1e3;
var StaleError = class extends Error {
  constructor(current2, etag, cause) {
    super(`task changed concurrently: ${cause.message}`, { cause });
    this.current = current2;
    this.etag = etag;
  }
};
var ConflictError = class extends Error {
  constructor(id, current2) {
    super(`task ${id} kept changing (now ${current2.status} at rev ${current2.rev}); try again`);
    this.code = "conflict";
  }
};
function preconditionFailed(e) {
  return e instanceof S3Error && (e.status === 412 || e.status === 409 || e.status === 404 && e.code !== "NoSuchBucket");
}
function definite(e) {
  return e instanceof S3Error && (e.status === 401 || e.status === 403 || e.status === 501 || e.code === "NoSuchBucket");
}
async function forEachLimit(items, limit, fn) {
  let next = 0;
  const run = async () => {
    while (next < items.length) {
      const i = next++;
      await fn(items[i], i);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, run));
}
function stepsToCancel(rep) {
  const levels = /* @__PURE__ */ new Map();
  for (const s2 of rep.steps) {
    if (!s2.status || endedAs({ status: s2.status }) || s2.status === "archived") continue;
    if (!levels.has(s2.depth)) levels.set(s2.depth, []);
    levels.get(s2.depth).push(s2);
  }
  return [...levels.keys()].sort((a, b) => b - a).map((d) => levels.get(d));
}
function workflowRef(ref) {
  return isWorkflowID(ref) ? part("task_id", String(ref).toLowerCase()) : part("workflow_name", ref);
}
var S3Backend = class {
  constructor(cfg) {
    this.s3 = new S3(cfg);
    this.kind = "S3";
    this.actor = pageActor(cfg.accessKeyId, globalThis.location?.host);
  }
  now() {
    return this.s3.now();
  }
  /** requests counts the S3 requests the page sent so far, by kind. */
  requests() {
    return { ...this.s3.requests };
  }
  /** shards reads queue.json for the shard layout. */
  async shards() {
    const obj = await this.s3.get(CONFIG_KEY);
    if (!obj) throw new Error("this bucket holds no qo queue (no queue.json): run qo init");
    const cfg = JSON.parse(obj.text);
    if ((cfg.format || 1) < LAYOUT_VERSION) {
      throw new Error(`this queue uses an older key layout (format ${cfg.format || 1}): stop its workers and run qo migrate`);
    }
    if (cfg.format > LAYOUT_VERSION) throw new Error(`this queue was written by a newer qo (format ${cfg.format}): use its web UI`);
    this.shardList = shards(cfg.shard_chars || 1);
    return this.shardList;
  }
  /**
   * listTasks returns one page. Pending, running and failed tasks come from
   * their indexes (one LIST, a GET per task shown); other statuses, and all
   * of them, from the tasks created in the last 24 hours, newest first (a
   * LIST per shard, a GET per task shown): never the whole history.
   */
  async listTasks({ shard = "", status = "", cursor = "", type = "" } = {}) {
    if (INDEX_OF[status]) return this.listIndex(INDEX_OF[status], status, shard, cursor, { type });
    return this.listWindow(status, shard, cursor, type);
  }
  async readTasks(keys) {
    const tasks2 = [];
    const malformed = [];
    await Promise.all(keys.map(async (key, i) => {
      const obj = await this.s3.get(key);
      if (!obj) return;
      try {
        tasks2[i] = decodeTask(key, obj.text);
      } catch (e) {
        malformed.push({ key, error: e.message });
      }
    }));
    return { tasks: tasks2, malformed };
  }
  /**
   * listIndex lists one page of an index: without a filter the prefix
   * holds, a LIST of limit keys; with one, LISTs of 1,000 keys (at most
   * TYPE_SCAN_PAGES) whose keys name the type and shard are kept until
   * limit of them are found (the key says both, so nothing is read for the
   * others); then a GET per task. The ready index is partitioned by type,
   * then shard: a type narrows the prefix, and a shard alone is listed
   * across the types, hopping past each type's other shards
   * (readyShardHop).
   */
  async listIndex(root, status, shard, cursor, { type = "", limit = PAGE } = {}) {
    const ready = root === READY_PREFIX;
    let prefix = root === DEAD_PREFIX || !shard ? root : `${root}${shard}/`;
    if (ready) prefix = !type ? root : shard ? readyPartitionPrefix(type, shard) : `${root}${type}/`;
    const scan = type || ready && shard;
    const entries = [];
    let after = cursor;
    let more = false;
    for (let pages = 0; ; pages++) {
      if (pages === TYPE_SCAN_PAGES) {
        more = true;
        break;
      }
      const page = await this.s3.list(prefix, { startAfter: after, maxKeys: scan ? 1e3 : limit });
      let i = 0;
      for (; i < page.keys.length && entries.length < limit; i++) {
        const { key } = page.keys[i];
        after = key;
        const ref = parseIndexKey(key);
        if (!ref || shard && ref.shard !== shard || type && indexEntry(key)?.type !== type) continue;
        entries.push({ key, ref });
      }
      more = i < page.keys.length || Boolean(page.next);
      if (ready && shard && i === page.keys.length) after = readyShardHop(after, shard);
      if (!more || !scan || entries.length >= limit) break;
    }
    const { tasks: tasks2, malformed } = await this.readTasks(entries.map((e) => taskKey(e.ref.shard, e.ref.id)));
    const shown = entries.map((e, i) => tasks2[i]).filter((t, i) => t && t.status === status && indexKeys(t).includes(entries[i].key));
    return { tasks: shown, malformed, next_cursor: more ? after : "" };
  }
  async listWindow(status, shard, cursor, type = "") {
    const now = this.now().getTime();
    const lo = idFloor(now - LIST_WINDOW_MS);
    const hi = cursor || idFloor(now + 6e4);
    const ids = [];
    await Promise.all((shard ? [shard] : this.shardList || []).map(async (s2) => {
      const prefix = `${TASKS_PREFIX}${s2}/`;
      let startAfter = prefix + lo;
      for (; ; ) {
        const page = await this.s3.list(prefix, { startAfter });
        let done = !page.next;
        for (const { key } of page.keys) {
          const id = key.slice(prefix.length, -".json".length);
          if (id >= hi) {
            done = true;
            break;
          }
          startAfter = key;
          if (key.endsWith(".json") && validPart("task_id", id) && shardOf(id, s2.length) === s2) ids.push({ id, shard: s2 });
        }
        if (done || page.keys.length === 0) return;
      }
    }));
    ids.sort((a, b) => a.id < b.id ? 1 : -1);
    const pageIDs = ids.slice(0, PAGE);
    const { tasks: tasks2, malformed } = await this.readTasks(pageIDs.map((x) => taskKey(x.shard, x.id)));
    const wanted = (t) => t && (status ? t.status === status : t.status !== "archived") && (!type || t.task_type === type);
    return {
      tasks: tasks2.filter(wanted),
      malformed,
      since: new Date(now - LIST_WINDOW_MS).toISOString(),
      next_cursor: ids.length > PAGE ? pageIDs.at(-1).id : ""
    };
  }
  async getTask(id, shardChars) {
    const key = taskKey(shardOf(id, shardChars), id);
    const obj = await this.s3.get(key);
    if (!obj) throw new Error(`task ${id} not found`);
    return { task: decodeTask(key, obj.text), etag: obj.etag };
  }
  /**
   * viewTask returns task id as queue's Get shows it: a waiting child of a
   * wide fan-in carries the parents' ends its edge objects hold and it does
   * not record yet (1 LIST more per 1,000 edges, only while two or more
   * parents are left); any other task as stored.
   */
  async viewTask(id, shardChars) {
    const { task } = await this.getTask(id, shardChars);
    if (task.status !== "waiting" || !hasEdges(task) || (task.parents || []).filter((p) => !p.done).length < 2) return { task };
    const ends = unrecorded(task, (await this.listEdges(id)).ends);
    if (Object.keys(ends).length === 0) return { task };
    return { task: { ...task, parents: task.parents.map((p) => Object.hasOwn(ends, p.id) ? { ...p, done: ends[p.id] } : p) } };
  }
  /**
   * taskProgress returns a running task's progress (queue.progressOf) with
   * one GET of the registry entry of the worker its lease names; null when
   * not running, or the entry is gone or malformed.
   */
  async taskProgress(t) {
    const key = t?.status === "running" && validPart("worker_id", t.worker_id) ? workerKey(t.worker_id) : "";
    if (!key) return null;
    const obj = await this.s3.get(key);
    if (!obj) return null;
    try {
      return progressOf(t, JSON.parse(obj.text));
    } catch {
      return null;
    }
  }
  /**
   * search finds tasks (a query of search.parseSearch) at a cost set by
   * what it shows (search.searchCost): a full id is a GET; an id prefix a
   * LIST of tasks/{shard}/{prefix} per shard (S3 matches the keys) and a
   * GET per task shown, oldest first; a type the pending, running and
   * failed tasks its index keys name (listIndex); an idempotency key a GET
   * of its marker and one of its task. It returns {tasks, more, malformed}
   * (more lists the statuses with more tasks for a type).
   */
  async search(q) {
    const list = this.shardList || await this.shards();
    if (q.kind === "type") {
      const parts = await Promise.all(SEARCHED.map((status) => this.listIndex(INDEX_OF[status], status, "", "", { type: q.type, limit: SEARCH_LIMIT })));
      return {
        tasks: parts.flatMap((p) => p.tasks),
        malformed: parts.flatMap((p) => p.malformed),
        more: SEARCHED.filter((st, i) => parts[i].next_cursor)
      };
    }
    let ids = [];
    let more = false;
    if (q.kind === "key") {
      const marker = await this.s3.get(await idempotencyKey(q.type, q.key));
      if (marker) {
        let rec = null;
        try {
          rec = JSON.parse(marker.text);
        } catch {
        }
        if (!(rec?.format === FORMAT_VERSION && ID.test(rec.task_id))) return { tasks: [], more: false, malformed: [{ key: "idempotency marker", error: "not an idempotency record" }] };
        ids = [rec.task_id];
      }
    } else if (q.full) {
      ids = [q.prefix];
    } else {
      await Promise.all(idShards(q.prefix, list).map(async (shard) => {
        const dir = `${TASKS_PREFIX}${shard}/`;
        const page = await this.s3.list(dir + q.prefix, { maxKeys: SEARCH_LIMIT + 1 });
        for (const { key } of page.keys) {
          const id = key.slice(dir.length, -".json".length);
          if (ID.test(id) && shardOf(id, shard.length) === shard) ids.push(id);
        }
      }));
      if (!ids.length) ids = await this.findBySuffix(idSuffix(q.prefix.replace(/-/g, "")), list[0].length);
      ids.sort();
      more = ids.length > SEARCH_LIMIT;
      ids = ids.slice(0, SEARCH_LIMIT);
    }
    const n = list[0].length;
    const { tasks: tasks2, malformed } = await this.readTasks(ids.map((id) => taskKey(shardOf(id, n), id)));
    return { tasks: tasks2.filter(Boolean), more: more ? ["id"] : [], malformed };
  }
  /**
   * findBySuffix returns the ids that end with suffix (the short id a list
   * shows), as queue.ResolveID finds them: the end of a time-ordered id
   * holds its shard, so only that shard's ready, lease and waiting
   * entries, its tasks created in the list window and the newest dead
   * letters are listed, at most RESOLVE_PAGES LISTs each, whatever the
   * history.
   */
  async findBySuffix(suffix, n) {
    const hex = suffix.replace(/-/g, "");
    if (hex.length < n) return [];
    const shard = hex.slice(-n);
    const tasks2 = `${TASKS_PREFIX}${shard}/`;
    const fromKey = (key) => indexEntry(key)?.id;
    const places = [
      { prefix: READY_PREFIX, id: fromKey, hop: (key) => readyShardHop(key, shard) },
      // every type's partition of the shard
      { prefix: `${LEASES_PREFIX}${shard}/`, id: fromKey },
      { prefix: `${WAITING_PREFIX}${shard}/`, id: fromKey },
      { prefix: DEAD_PREFIX, id: fromKey },
      { prefix: tasks2, after: tasks2 + idFloor(this.now().getTime() - LIST_WINDOW_MS), id: (key) => key.slice(tasks2.length, -".json".length) }
    ];
    const found = /* @__PURE__ */ new Set();
    await Promise.all(places.map(async (p) => {
      let after = p.after || "";
      for (let i = 0; i < RESOLVE_PAGES; i++) {
        const page = await this.s3.list(p.prefix, { startAfter: after });
        for (const { key } of page.keys) {
          const id = p.id(key);
          if (id && ID.test(id) && id.endsWith(suffix)) found.add(id);
          after = key;
        }
        if (!page.next || !page.keys.length) return;
        if (p.hop) after = p.hop(after);
      }
    }));
    return [...found];
  }
  /**
   * deadOfType lists the dead letters of a type for a bulk action, from
   * the dead-letter keys alone (they name the type): a LIST per 1,000
   * entries, at most BULK_SCAN_PAGES (partial says it stopped there).
   */
  async deadOfType(type) {
    const candidates = [];
    let after = "";
    let lists = 0;
    let partial = false;
    for (; ; ) {
      if (lists === BULK_SCAN_PAGES) {
        partial = true;
        break;
      }
      const page = await this.s3.list(DEAD_PREFIX, { startAfter: after });
      lists++;
      for (const { key } of page.keys) {
        const e = indexEntry(key);
        if (e?.type === type) candidates.push(deadEntryTask({ ...e, key }));
        after = key;
      }
      if (!page.next || page.keys.length === 0) break;
    }
    return { candidates, found: { s3: { LIST: lists } }, partial };
  }
  /**
   * tasksInFilter lists the tasks of a filter ({status, shard, type}) for
   * a bulk action, page by page as the list does (listTasks), at most
   * BULK_FILTER_PAGES pages (partial says it stopped there). found is
   * what the listing cost.
   */
  async tasksInFilter({ status = "", shard = "", type = "" } = {}) {
    const before = this.requests();
    const candidates = [];
    let cursor = "";
    let pages = 0;
    let partial = false;
    do {
      if (pages === BULK_FILTER_PAGES) {
        partial = true;
        break;
      }
      const page = await this.listTasks({ status, shard, cursor, type });
      pages++;
      candidates.push(...page.tasks);
      cursor = page.next_cursor;
    } while (cursor);
    const after = this.requests();
    const s3 = Object.fromEntries(Object.entries(after).map(([op, n]) => [op, n - (before[op] || 0)]).filter(([, n]) => n > 0));
    return { candidates, found: { s3 }, partial };
  }
  /** history reads every version of a task, oldest first. */
  async history(task) {
    const key = taskKey(task.shard, task.id);
    const versions = (await this.s3.versions(key)).reverse();
    return Promise.all(versions.map(async (v) => {
      if (v.deleteMarker) return { event: "deleted", at: v.lastModified, version_id: v.versionId, task: null };
      const obj = await this.s3.get(key, v.versionId);
      try {
        const t = decodeTask(key, obj.text);
        return { event: t.last_event || "unknown", at: t.updated_at, status: t.status, worker_id: t.worker_id, attempt: t.attempt, rev: t.rev, version_id: v.versionId, task: t };
      } catch (e) {
        return { event: "unknown", at: v.lastModified, version_id: v.versionId, error: e.message, task: null };
      }
    }));
  }
  /**
   * payloads returns a task's input and output, reading the ones stored in
   * their own object (input_ref, output_ref) at the version recorded.
   */
  async payloads(task) {
    const load5 = async (inline, ref, what) => {
      if (!ref) return inline;
      const key = payloadKey(task, ref, what);
      const obj = await this.s3.get(key, ref.version_id || void 0);
      if (!obj) throw new Error(`the offloaded payload ${key} is gone`);
      return JSON.parse(obj.text);
    };
    return { input: await load5(task.input, task.input_ref, "input"), output: await load5(task.output, task.output_ref, "output") };
  }
  /** control reads the pause switches (none stored: nothing paused). */
  async control() {
    const obj = await this.s3.get(CONTROL_KEY);
    return obj ? JSON.parse(obj.text) : { paused: false, paused_types: {} };
  }
  /**
   * setPause pauses or resumes a task type (the whole queue when type is
   * empty) the way qo pause and qo resume do: read control.json, apply the
   * shared rule, write it back only if it did not change meanwhile
   * (If-Match on its ETag, or create-only when there is none), and apply
   * again on the new version when it did.
   */
  async setPause(op, type, reason = "from the web UI") {
    for (let tries = 0; tries < 5; tries++) {
      const obj = await this.s3.get(CONTROL_KEY);
      const base = obj ? JSON.parse(obj.text) : null;
      const next = applyControl(base, op, type, reason, this.now().toISOString(), this.actor);
      if (!next) return base;
      try {
        await this.s3.put(CONTROL_KEY, JSON.stringify(next), obj ? { ifMatch: obj.etag } : { ifNoneMatch: "*" });
        return next;
      } catch (e) {
        if (e.status === 412 || e.status === 409) continue;
        throw e;
      }
    }
    throw new Error(`${op}: control.json kept changing; try again`);
  }
  /**
   * stats counts the queue as GET /api/stats does, from the index keys and
   * the heartbeats, reading no task: a LIST per 1,000 entries of each index
   * (ready, leases, waiting, dead)
   * (at most MAX_INDEX_PAGES each), one of the registry, and a GET per
   * worker whose heartbeat changed since the last call, and control.json
   * (the unserved types). The request rate is measured across calls.
   */
  async stats() {
    const now = this.now();
    const [ready, leases, waiting, dead] = await Promise.all([READY_PREFIX, LEASES_PREFIX, WAITING_PREFIX, DEAD_PREFIX].map((p) => this.listKeys(p, MAX_INDEX_PAGES)));
    const { records, malformed } = await this.readWorkers();
    const control = await this.control().catch(() => null);
    const hours = await this.readThroughput(now.getTime()).catch(() => []);
    this.meter ??= new RateMeter();
    return countStats({
      ready: ready.keys,
      leases: leases.keys,
      waiting: waiting.keys,
      dead: dead.keys,
      partial: ready.partial || leases.partial || waiting.partial || dead.partial,
      workers: records,
      malformed,
      now,
      control,
      meter: this.meter,
      hours
    });
  }
  /**
   * readThroughput reads the monitor's rollup of the last DAY_HOURS hours
   * as inspect does: one LIST starting after the day's first hour, and a
   * GET of each hour object whose ETag changed since the last call.
   */
  async readThroughput(nowMs) {
    const cache = this.hourCache ??= /* @__PURE__ */ new Map();
    const page = await this.s3.list(THROUGHPUT_PREFIX, { startAfter: throughputKey(nowMs - (DAY_HOURS + 1) * 36e5) });
    const present = new Set(page.keys.map((k) => k.key));
    for (const key of cache.keys()) if (!present.has(key)) cache.delete(key);
    await Promise.all(page.keys.filter(({ key, etag }) => cache.get(key)?.etag !== etag || !etag).map(async ({ key, etag }) => {
      const obj = await this.s3.get(key);
      if (!obj) return cache.delete(key);
      try {
        const hour = JSON.parse(obj.text);
        if (hour.format !== FORMAT_VERSION || !Array.isArray(hour.minutes)) throw new Error("not a qo throughput hour");
        return cache.set(key, { etag, hour });
      } catch {
        return cache.delete(key);
      }
    }));
    return [...cache.values()].map((e) => e.hour);
  }
  /** listKeys lists the keys under prefix, at most maxPages pages; partial says there were more. */
  async listKeys(prefix, maxPages) {
    const keys = [];
    let token = "";
    for (let i = 0; i < maxPages; i++) {
      const page = await this.s3.list(prefix, { token });
      keys.push(...page.keys.map((k) => k.key));
      if (!page.next) return { keys, partial: false };
      token = page.next;
    }
    return { keys, partial: true };
  }
  /**
   * readWorkers reads the worker registry, keeping each record with the
   * ETag it was listed with: a heartbeat that did not change since the
   * last call is not read again.
   */
  async readWorkers() {
    const cache = this.workerCache ??= /* @__PURE__ */ new Map();
    const listed = [];
    let token = "";
    do {
      const page = await this.s3.list(WORKERS_PREFIX, { token });
      listed.push(...page.keys);
      token = page.next;
    } while (token);
    const present = new Set(listed.map((k) => k.key));
    for (const key of cache.keys()) if (!present.has(key)) cache.delete(key);
    await Promise.all(listed.filter(({ key, etag }) => cache.get(key)?.etag !== etag || !etag).map(async ({ key, etag }) => {
      const id = parseWorkerKey(key);
      if (id === null) {
        cache.set(key, { etag, error: { key, error: "not a worker registry key (want workers/{worker id}.json): not read" } });
        return;
      }
      const obj = await this.s3.get(key);
      if (!obj) {
        cache.delete(key);
        return;
      }
      try {
        const w = JSON.parse(obj.text);
        if (!(w.format === FORMAT_VERSION && typeof w.worker_id === "string")) throw new Error("not a qo record");
        if (w.worker_id !== id) throw new Error(`the record says worker ${JSON.stringify(w.worker_id)}`);
        cache.set(key, { etag, record: w });
      } catch (e) {
        cache.set(key, { etag, error: { key, error: e.message } });
      }
    }));
    const records = [];
    const malformed = [];
    for (const e of cache.values()) {
      if (e.record) records.push(e.record);
      else malformed.push(e.error);
    }
    return { records, malformed };
  }
  /** schedules reads every live schedule. */
  async schedules() {
    const { records, malformed } = await this.readAll(SCHEDULES_PREFIX, parseScheduleKey, (s2, name) => s2.format === FORMAT_VERSION && s2.name === name);
    return { schedules: records.filter((s2) => !s2.deleted).sort((a, b) => a.name.localeCompare(b.name)), malformed };
  }
  async workers() {
    const { records, malformed } = await this.readWorkers();
    records.sort((a, b) => a.worker_id.localeCompare(b.worker_id));
    return { workers: records, malformed };
  }
  /**
   * readAll reads every JSON object under prefix whose key parseKey reads
   * (others are reported, not read); ok(record, parsed) says which are
   * trusted.
   */
  async readAll(prefix, parseKey, ok) {
    const out = [];
    const malformed = [];
    let token = "";
    do {
      const page = await this.s3.list(prefix, { token });
      await Promise.all(page.keys.map(async ({ key }) => {
        const name = parseKey(key);
        if (name === null) {
          malformed.push({ key, error: "not a key qo writes here: not read" });
          return;
        }
        const obj = await this.s3.get(key);
        if (!obj) return;
        try {
          const v = JSON.parse(obj.text);
          if (!ok(v, name)) throw new Error("not a qo record");
          out.push(v);
        } catch (e) {
          malformed.push({ key, error: e.message });
        }
      }));
      token = page.next;
    } while (token);
    return { records: out, malformed };
  }
  /**
   * act applies an operator action the way qo does: read the task, apply
   * the shared rules, write it (apply), and tell its children what a
   * cancel or a replay means for them (afterLanded). It returns the
   * version written, or the task as read when the action changes nothing.
   */
  async act(op, id, shardChars, reason = "from the web UI") {
    const { next } = await this.operate(id, shardChars, (base, now, requestID) => applyOperator(base, op, reason, this.actor, now, requestID));
    return next;
  }
  /**
   * operate reads task id and writes the version make(base, now,
   * requestID) makes of it (null: nothing to write) with apply, as queue's
   * operate does. edge is for the write a parent's end makes on a child
   * (queue's operateEdge): parents ending at once all rebase onto the
   * child, so a ConflictError starts it over, for up to EDGE_MS. read
   * ({task, etag}) is the task as the caller just read it: the first
   * attempt starts from it rather than reading it again.
   */
  async operate(id, shardChars, make, { edge = false, read = null } = {}) {
    const started = Date.now();
    for (let first = read; ; first = null) {
      const { task, etag } = first || await this.getTask(id, shardChars);
      try {
        return await this.apply(task, etag, make, shardChars);
      } catch (e) {
        if (!(edge && e instanceof ConflictError && Date.now() - started < EDGE_MS)) throw e;
      }
    }
  }
  /**
   * apply writes the version make makes of base (read with etag) in the
   * order queue's apply keeps (queue/doc.go, "Index entries are written
   * first", and "rev, attempt and request_id"):
   *
   *  1. PUT the entries the new version needs and base lacks; one that
   *     cannot be written stops the action with the task untouched;
   *  2. PUT the task, If-Match base's ETag (putTask settles an answer
   *     that was lost);
   *  3. once it certainly landed, DELETE the entries only base needed,
   *     then tell the task's children (afterLanded).
   *
   * When the task write's outcome stays unknown, every entry, old and new,
   * is left in place and the error says so. When it certainly did not land
   * (another writer's version is there), the change is made again on that
   * version with the same request id, and the entries this call wrote are
   * deleted once no version it writes needs them, except those the
   * current version needs. Returns {prev, next, etag}: next is prev when
   * the change writes nothing.
   */
  async apply(base, etag, make, shardChars) {
    const requestID = crypto.randomUUID();
    const written = [];
    for (let rebases = 0; ; rebases++) {
      let next;
      try {
        next = make(base, this.now(), requestID);
      } catch (e) {
        await this.dropEntries(written, base);
        throw e;
      }
      if (!next) {
        await this.dropEntries(written, base);
        return { prev: base, next: base, etag };
      }
      const idx = indexChanges(base, next);
      const entriesAt = this.now().getTime();
      for (const k of idx.put) {
        try {
          await this.s3.put(k, "");
        } catch (e) {
          throw new Error(`write index entry ${k}: ${e.message} (task ${base.id} not changed)`, { cause: e });
        }
        written.push(k);
      }
      let stored;
      try {
        stored = await this.putTask(next, etag, base.request_id);
      } catch (e) {
        if (!(e instanceof StaleError)) throw e;
        if (!e.current) {
          await this.dropEntries(written, null);
          throw new Error(`task ${base.id} not found (it disappeared)`, { cause: e });
        }
        if (rebases >= MAX_REBASES) {
          await this.dropEntries(written, e.current);
          throw new ConflictError(base.id, e.current);
        }
        ({ current: base, etag } = e);
        continue;
      }
      const landed = stored.task;
      const after = indexChanges(base, landed);
      await this.dropEntries(written, landed);
      const again = this.now().getTime() - entriesAt > INDEX_GRACE_MS / 2 ? after.put : after.put.filter((k) => !written.includes(k));
      await Promise.allSettled(again.map((k) => this.s3.put(k, "")));
      await Promise.allSettled(after.del.map((k) => this.s3.del(k)));
      await this.afterLanded(base, landed, shardChars);
      return { prev: base, next: landed, etag: stored.etag };
    }
  }
  /**
   * putTask writes next If-Match etag (the version whose request id is
   * prevRequestID) and settles an unknown outcome as queue's putTask does:
   * after any failure but a definite refusal, the task is re-read. If it
   * carries next's request id the write landed: {task, etag} of the
   * version stored. If it is still the base version and the failure was
   * not a refused condition (which may be the answer to a retry of a PUT
   * that had committed), the PUT is sent again, at most MAX_PUT_ATTEMPTS
   * times. If another version is there (or none), a StaleError says so:
   * the write certainly did not land. Otherwise (the re-read failed too)
   * the outcome stays unknown: an Error that says so.
   */
  async putTask(next, etag, prevRequestID) {
    const key = taskKey(next.shard, next.id);
    const body = JSON.stringify(next);
    for (let attempt = 1; ; attempt++) {
      let perr;
      try {
        return { task: next, etag: await this.s3.put(key, body, { ifMatch: etag }) };
      } catch (e) {
        perr = e;
      }
      if (definite(perr)) throw new Error(`write task ${next.id}: ${perr.message}`, { cause: perr });
      let obj;
      let cur = null;
      try {
        obj = await this.s3.get(key);
        if (obj) cur = decodeTask(key, obj.text);
      } catch (gerr) {
        throw new Error(`write task ${next.id}: outcome unknown: ${perr.message} (re-read failed: ${gerr.message}); its index entries are left in place, reload to see where it stands`, { cause: perr });
      }
      if (!cur) throw new StaleError(null, "", perr);
      if (cur.request_id === next.request_id) return { task: obj.text === body ? next : cur, etag: obj.etag };
      if (cur.request_id !== prevRequestID || preconditionFailed(perr)) throw new StaleError(cur, obj.etag, perr);
      if (attempt >= MAX_PUT_ATTEMPTS) throw new Error(`write task ${next.id}: ${perr.message} (task not changed)`, { cause: perr });
    }
  }
  /**
   * dropEntries deletes entries this call wrote for a version that
   * certainly did not land, except those the current version (cur, null
   * when there is none) needs (queue's dropEntries). Best effort: an entry
   * left is stale, and its next reader removes it.
   */
  async dropEntries(written, cur) {
    const keep = cur ? indexKeys(cur) : [];
    await Promise.allSettled([...new Set(written)].filter((k) => !keep.includes(k)).map((k) => this.s3.del(k)));
  }
  /**
   * afterLanded does what a landed write owes the task's children, as
   * queue's afterLanded does: when the task has just ended (the page ends
   * a task only by cancelling it), its end is recorded on each waiting
   * child, whose on_parent_failure then cancels, fails or releases it (a
   * child that ends tells its own children in turn); when it was
   * replayed, the children that ended because of it wait for it again
   * (and theirs in turn). A GET and a conditional PUT per child (an end
   * on a wide child: see endOnChild), WORKFLOW_CONCURRENCY at a time,
   * index entries first. Best effort, as in Go: a child not updated is
   * left to the sweeper (SweepWaiting).
   */
  async afterLanded(prev, next, shardChars) {
    if (prev === next || !next.children?.length) return;
    const done = endedAs(next);
    let tell;
    if (done && done !== "completed" && !endedAs(prev)) {
      tell = (child) => this.endOnChild(next, child, shardChars);
    } else if (next.last_event === "replayed") {
      tell = (child) => this.operate(child, shardChars, (t, now, requestID) => rewait(t, next.id, now, requestID));
    } else {
      return;
    }
    await forEachLimit(next.children, WORKFLOW_CONCURRENCY, async (child) => {
      try {
        await tell(child);
      } catch (e) {
        console.warn(`task ${next.id}: its child ${child} was not updated (qo's sweeper will): ${e.message}`);
      }
    });
  }
  /**
   * endOnChild tells waiting child childID that parent ended, as queue's
   * endOnChild does (queue/doc.go, "Dependencies"). A child with at most
   * EDGE_FAN_IN parents, or one this end decides (its last parent, or one
   * that decides by on_parent_failure), gets the end written on it (1 GET
   * + 1 PUT). On a wider one the end is an edge object (1 PUT of an empty
   * object), then the child's edges are listed (1 LIST) and the child read
   * again (1 GET): when the ends found there decide it, one write records
   * them all. Every writer of an end lists the edges after its write and
   * every writer of an edge reads the child after writing it, so the last
   * end is never left unseen, whichever writer (a worker, qo, the page)
   * makes it.
   */
  async endOnChild(parent, childID, shardChars) {
    const st = endedAs(parent);
    const read = await this.getTask(childID, shardChars);
    const base = read.task;
    const p = (base.parents || []).find((x) => x.id === parent.id);
    if (base.status !== "waiting" || !p || p.done) return;
    const ends = { [parent.id]: st };
    if (!hasEdges(base) || decides(base, ends)) {
      await this.recordOnChild(childID, shardChars, ends, read);
      return;
    }
    await this.s3.put(edgeKey(childID, parent.id, st), "");
    const edges = await this.listEdges(childID);
    const cur = await this.getTask(childID, shardChars);
    if (cur.task.status !== "waiting") return;
    await this.settleEdges(childID, shardChars, cur.task, cur.etag, edges);
  }
  /**
   * recordOnChild records ends on waiting child childID (as read: read)
   * as queue's recordEnds does; then, on a wide child, lists its edges:
   * when the write decided it, its edge objects are removed (it records
   * those ends itself now); while it waits, the ends other parents left
   * there are recorded when they decide it (settleEdges).
   */
  async recordOnChild(childID, shardChars, ends, read) {
    const { prev, next } = await this.operate(childID, shardChars, (t, now, requestID) => recordEnds(t, ends, now, requestID), { edge: true, read });
    if (prev === next || !hasEdges(next)) return;
    const edges = await this.listEdges(childID);
    if (next.status !== "waiting") {
      await this.dropEdges(edges.keys);
      return;
    }
    await this.settleEdges(childID, shardChars, next, "", edges);
  }
  /**
   * settleEdges records the ends edges hold on waiting child t (as read
   * with etag, or '' to read it again before writing) when they decide
   * it, in one write, then removes the edge objects (queue's
   * settleEdges).
   */
  async settleEdges(childID, shardChars, t, etag, edges) {
    const more = unrecorded(t, edges.ends);
    if (!Object.keys(more).length || !decides(t, more)) return;
    const read = etag ? { task: t, etag } : null;
    const { next } = await this.operate(childID, shardChars, (c, now, requestID) => recordEnds(c, more, now, requestID), { edge: true, read });
    if (next.status !== "waiting") await this.dropEdges(edges.keys);
  }
  /**
   * listEdges lists the edge objects of child childID (1 LIST per 1,000):
   * {ends: {parent id: status}, keys}. A key qo did not write is reported
   * and skipped. A parent with two edges (replayed after it ended) counts
   * as completed if one says so, else as the first (queue's listEdges).
   */
  async listEdges(childID) {
    const ends = {};
    const keys = [];
    let token = "";
    do {
      const page = await this.s3.list(`${EDGES_PREFIX}${childID}/`, { token });
      for (const { key } of page.keys) {
        const e = parseEdgeKey(key);
        if (!e || e.child !== childID) {
          console.warn(`skipping a malformed edge object: ${key}`);
          continue;
        }
        keys.push(key);
        if (!Object.hasOwn(ends, e.parent) || ends[e.parent] !== "completed" && e.status === "completed") ends[e.parent] = e.status;
      }
      token = page.next;
    } while (token);
    return { ends, keys };
  }
  /**
   * dropEdges removes edge objects a write recorded on their child (best
   * effort, as in Go: one left behind is ignored once the child records
   * its parent's end).
   */
  async dropEdges(keys) {
    await forEachLimit(keys, WORKFLOW_CONCURRENCY, async (key) => {
      try {
        await this.s3.del(key);
      } catch (e) {
        console.warn(`edge object ${key} not removed: ${e.message}`);
      }
    });
  }
  /**
   * workflow reads a workflow by id or name as GET /api/workflows/{ref}
   * answers it: a GET of the record (and one of the name before), then a
   * GET per step's task, WORKFLOW_CONCURRENCY at a time; a task missing or
   * malformed is the step's problem.
   */
  async workflow(ref) {
    const n = (this.shardList || await this.shards())[0].length;
    let id = workflowRef(ref);
    if (!isWorkflowID(ref)) {
      const obj2 = await this.s3.get(workflowNameKey(ref));
      if (!obj2) throw new Error(`no workflow named "${ref}" (the list of workflows shows the names)`);
      id = decodeWorkflowName(workflowNameKey(ref), obj2.text);
    }
    const key = workflowKey(id, n);
    const obj = await this.s3.get(key);
    if (!obj) throw new Error(`workflow ${id} not found`);
    const w = decodeWorkflow(key, obj.text);
    const tasks2 = w.steps.map(() => null);
    const problems = {};
    await forEachLimit(w.steps, WORKFLOW_CONCURRENCY, async (step, i) => {
      if (!validPart("task_id", step.task_id)) {
        problems[step.name] = `its task id ${JSON.stringify(step.task_id)} is not a task id: the step is skipped (the record ${key} was not written by qo)`;
        return;
      }
      const tk = taskKey(shardOf(step.task_id, n), step.task_id);
      const got = await this.s3.get(tk);
      if (!got) {
        problems[step.name] = `its task does not exist (the submit stopped half-way, or retention expired it); to finish a submit, submit the file again with idempotency key ${JSON.stringify(w.idempotency_key)}`;
        return;
      }
      try {
        tasks2[i] = decodeTask(tk, got.text);
      } catch (e) {
        problems[step.name] = `its task object is malformed: ${e.message}`;
      }
    });
    return report(w, tasks2, problems);
  }
  /** workflowRecordName reads a workflow's name off its record (1 GET). */
  async workflowRecordName(id) {
    const key = workflowKey(id, (this.shardList || await this.shards())[0].length);
    const obj = await this.s3.get(key);
    return obj ? decodeWorkflow(key, obj.text).name || "" : "";
  }
  /**
   * workflowNames lists the workflow names with the latest workflow of
   * each, as GET /api/workflows: one LIST page of workflow-names/ (the
   * first 1,000) and a GET per name.
   */
  async workflowNames() {
    const page = await this.s3.list(WORKFLOW_NAMES_PREFIX, { maxKeys: WORKFLOW_NAMES_LIMIT });
    const out = [];
    const malformed = [];
    await forEachLimit(page.keys, WORKFLOW_CONCURRENCY, async ({ key }, i) => {
      const name = parseWorkflowNameKey(key);
      if (name === null) {
        malformed.push({ key, error: "not a workflow name key: not read" });
        return;
      }
      const obj = await this.s3.get(key);
      if (!obj) return;
      try {
        const rec = JSON.parse(obj.text);
        if (rec.name !== name) throw new Error(`the record says name ${JSON.stringify(rec.name)}`);
        out[i] = { name: rec.name, id: decodeWorkflowName(key, obj.text), created_at: rec.created_at };
      } catch (e) {
        malformed.push({ key, error: e.message });
      }
    });
    return { workflows: out.filter(Boolean), malformed, more: Boolean(page.next) };
  }
  /**
   * cancelWorkflow cancels every step that has not ended with the page's
   * single-task cancel, the deepest steps first (children before their
   * parents, so each keeps the operator's reason); a step that ended
   * meanwhile is left as it is. Returns {cancelled}.
   */
  async cancelWorkflow(ref, reason = "from the web UI") {
    const rep = await this.workflow(ref);
    const n = this.shardList[0].length;
    let cancelled = 0;
    const errors = [];
    for (const level of stepsToCancel(rep)) {
      await forEachLimit(level, WORKFLOW_CONCURRENCY, async (s2) => {
        try {
          await this.act("cancel", s2.task_id, n, reason);
          cancelled++;
        } catch (e) {
          if (!(e instanceof TransitionError)) errors.push(`step ${s2.name}: ${e.message}`);
        }
      });
    }
    if (errors.length) throw new Error(`cancelled ${cancelled}; ${errors.join("; ")}`);
    return { cancelled };
  }
};
var ApiBackend = class {
  constructor({ api, token }) {
    this.base = api.replace(/\/+$/, "");
    this.token = token;
    this.kind = "API";
    this.offset = 0;
    this.sent = {};
  }
  now() {
    return new Date(Date.now() + this.offset);
  }
  /** requests counts the requests the page sent to qo serve, by method. */
  requests() {
    return { ...this.sent };
  }
  async call(method, path, body) {
    this.sent[method] = (this.sent[method] || 0) + 1;
    const headers = body ? { "Content-Type": "application/json" } : {};
    if (this.token) headers.Authorization = `Bearer ${this.token}`;
    const res = await fetch(this.base + path, { method, headers, body: body && JSON.stringify(body) });
    const date = res.headers.get("Date");
    if (date) this.offset = Date.parse(date) + 500 - Date.now();
    this.readOnly = res.headers.get("X-Qo-Read-Only") === "true";
    const data = await res.json().catch(() => ({}));
    if (!res.ok) {
      const msg = data.error?.message || `${res.status} ${res.statusText}`;
      if (res.status === 401 && !this.token) throw new Error(`${msg}: this browser holds no session; open a new link from qo serve (its one-time code opens one; POST /api/login-codes with the token makes another)`);
      throw new Error(msg);
    }
    return data;
  }
  async shards() {
    const st = await this.call("GET", "/api/stats");
    const n = Object.keys(st.by_shard || {}).reduce((m, s2) => Math.max(m, s2.length), 1);
    return shards(n);
  }
  async listTasks({ shard = "", status = "", cursor = "", type = "" } = {}) {
    const q = new URLSearchParams({ limit: String(PAGE) });
    if (shard) q.set("shard", shard);
    if (type) q.set("type", type);
    if (status) q.set("status", status);
    if (cursor) q.set("cursor", cursor);
    return this.call("GET", `/api/tasks?${q}`);
  }
  async getTask(id) {
    return { task: await this.call("GET", `/api/tasks/${part("task_id", id)}`) };
  }
  /** viewTask: GET /api/tasks/{id} already carries the ends of a wide fan-in's edges. */
  async viewTask(id) {
    return this.getTask(id);
  }
  async history(task) {
    return (await this.call("GET", `/api/tasks/${part("task_id", task.id)}/history`)).events;
  }
  /** taskProgress: GET /api/tasks/{id} already carries a running task's progress. */
  async taskProgress(t) {
    return t?.progress ?? null;
  }
  /**
   * search: a type's pending, running and failed tasks from GET
   * /api/tasks (one request per status); an id prefix or an idempotency
   * key from GET /api/search.
   */
  async search(q) {
    if (q.kind === "type") {
      const pages = await Promise.all(SEARCHED.map((status) => this.call("GET", `/api/tasks?${new URLSearchParams({ status, type: q.type, limit: String(SEARCH_LIMIT) })}`)));
      return {
        tasks: pages.flatMap((p) => p.tasks),
        malformed: pages.flatMap((p) => p.malformed || []),
        more: SEARCHED.filter((st, i) => pages[i].next_cursor)
      };
    }
    const params = q.kind === "key" ? { type: q.type, idempotency_key: q.key } : { id_prefix: q.prefix, limit: String(SEARCH_LIMIT) };
    const r = await this.call("GET", `/api/search?${new URLSearchParams(params)}`);
    return { tasks: r.tasks, more: r.more ? ["id"] : [], malformed: [] };
  }
  /**
   * deadOfType lists the dead letters of a type for a bulk action: pages
   * of GET /api/dead?type= (1,000 tasks each, at most BULK_SCAN_PAGES);
   * qo serve reads each task listed.
   */
  async deadOfType(type) {
    const candidates = [];
    let cursor = "";
    let calls = 0;
    let partial = false;
    do {
      if (calls === BULK_SCAN_PAGES) {
        partial = true;
        break;
      }
      const q = new URLSearchParams({ type, limit: "1000" });
      if (cursor) q.set("cursor", cursor);
      const page = await this.call("GET", `/api/dead?${q}`);
      calls++;
      candidates.push(...page.tasks);
      cursor = page.next_cursor;
    } while (cursor);
    return { candidates, found: { api: { GET: calls }, s3: { GET: candidates.length }, note: "and its LISTs of the dead-letter index" }, partial };
  }
  async workers() {
    const w = await this.call("GET", "/api/workers");
    return { workers: w.workers, malformed: [] };
  }
  /** payloads: the API returns offloaded payloads already loaded. */
  async payloads(task) {
    if (task.payload_error) throw new Error(task.payload_error);
    return { input: task.input, output: task.output };
  }
  async control() {
    return this.call("GET", "/api/control");
  }
  /** stats: the API's counts (reused by qo serve for 2 s whoever asks). */
  async stats() {
    return this.call("GET", "/api/stats");
  }
  async setPause(op, type, reason = "from the web UI") {
    if (op !== "pause" && op !== "resume") throw new Error(`unknown action ${op}`);
    return this.call("POST", `/api/${op}`, op === "pause" ? { type, reason } : { type });
  }
  async schedules() {
    return this.call("GET", "/api/schedules");
  }
  /** workflow: GET /api/workflows/{ref} (qo serve reads the record and a GET per step). */
  async workflow(ref) {
    return this.call("GET", `/api/workflows/${workflowRef(ref)}`);
  }
  /** workflowRecordName: the API has no cheaper read of a workflow's name than its report. */
  async workflowRecordName(id) {
    return (await this.workflow(id)).name || "";
  }
  /** workflowNames: GET /api/workflows. */
  async workflowNames() {
    const r = await this.call("GET", "/api/workflows");
    return { workflows: r.workflows || [], malformed: [] };
  }
  /** cancelWorkflow: POST /api/workflows/{ref}/cancel. */
  async cancelWorkflow(ref, reason = "from the web UI") {
    return this.call("POST", `/api/workflows/${workflowRef(ref)}/cancel`, { reason });
  }
  /**
   * bulk: POST /api/tasks/bulk, the queue's bulk action in qo serve: op on
   * the tasks named (ids) or found (filter: {status: [...], type, shard}),
   * each with the single-task conditional write; dryRun plans only. The
   * answer says what was (or would be) done, skipped and why, failed, and
   * the plan with its request cost.
   */
  async bulk(op, { ids, filter }, dryRun) {
    const body = { op, dry_run: Boolean(dryRun) };
    if (ids) body.ids = ids.map((id) => part("task_id", id));
    else body.filter = filter;
    if (op === "cancel") body.reason = "from the web UI";
    return this.call("POST", "/api/tasks/bulk", body);
  }
  /** scheduleAction: enable, disable, trigger or delete a schedule, as qo schedule does. */
  async scheduleAction(op, name) {
    const path = `/api/schedules/${encodeURIComponent(part("schedule_name", name))}`;
    switch (op) {
      case "enable":
      case "disable":
      case "trigger":
        return this.call("POST", `${path}/${op}`);
      case "delete":
        return this.call("DELETE", path);
    }
    throw new Error(`unknown schedule action ${op}`);
  }
  async act(op, id) {
    part("task_id", id);
    switch (op) {
      case "replay":
        return this.call("POST", `/api/tasks/${id}/replay`);
      case "archive":
        return this.call("POST", `/api/tasks/${id}/archive`);
      case "cancel":
        return this.call("POST", `/api/tasks/${id}/cancel`, { reason: "from the web UI" });
    }
    throw new Error(`unknown action ${op}`);
  }
};

// src/dom.js
function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else if (v === true) el.setAttribute(k, "");
    else if (v !== false && v != null) el.setAttribute(k, String(v));
  }
  for (const c of children.flat()) {
    if (c == null || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}
function s(tag, attrs = {}, ...children) {
  const el = document.createElementNS("http://www.w3.org/2000/svg", tag);
  for (const [k, v] of Object.entries(attrs)) if (v != null) el.setAttribute(k, String(v));
  for (const c of children.flat(Infinity)) {
    if (c == null || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}
var $ = (sel) => document.querySelector(sel);
function short(ms) {
  const s2 = Math.round(Math.abs(ms) / 1e3);
  if (s2 < 60) return `${s2}s`;
  if (s2 < 3600) return `${Math.floor(s2 / 60)}m${String(s2 % 60).padStart(2, "0")}s`;
  if (s2 < 86400) return `${Math.floor(s2 / 3600)}h${String(Math.floor(s2 % 3600 / 60)).padStart(2, "0")}m`;
  return `${Math.floor(s2 / 86400)}d${Math.floor(s2 % 86400 / 3600)}h`;
}
function ago(iso2, now) {
  if (!iso2) return "-";
  const d = now - Date.parse(iso2);
  return d >= -1e3 ? `${short(Math.max(d, 0))} ago` : `in ${short(d)}`;
}
function countdown(t, now) {
  if (t.status === "pending") {
    const d = Date.parse(t.available_at) - now;
    return d > 0 ? `runs in ${short(d)}` : `ready ${short(d)}`;
  }
  if (t.status === "running" && t.lease_expires_at) {
    const d = Date.parse(t.lease_expires_at) - now;
    return d >= 0 ? `lease ${short(d)} left` : `lease expired ${short(d)} ago`;
  }
  return "";
}
function jsonTree(name, value) {
  if (value !== null && typeof value === "object") {
    const entries = Array.isArray(value) ? value.map((v, i) => [`[${i}]`, v]) : Object.entries(value);
    const unit = Array.isArray(value) ? "item" : "key";
    return h(
      "details",
      { open: true, class: "json" },
      h("summary", {}, h("span", { class: "jkey" }, name), ` ${Array.isArray(value) ? "[" : "{"} ${entries.length} ${unit}${entries.length === 1 ? "" : "s"}`),
      entries.map(([k, v]) => jsonTree(Array.isArray(value) ? k : JSON.stringify(k), v))
    );
  }
  return h("div", { class: "json leaf" }, h("span", { class: "jkey" }, name), ": ", h("span", { class: "jval" }, JSON.stringify(value)));
}
var fmt = (n) => Number(n || 0).toLocaleString("en-US");
var oneLine = (s2) => {
  const one = String(s2).replace(/\s+/g, " ").trim();
  return one.length > 160 ? `${one.slice(0, 159)}\u2026` : one;
};
function field(name, value) {
  return h("tr", {}, h("th", {}, name), h("td", {}, value ?? "-"));
}
function clip(text, n) {
  return text.length > n ? `${text.slice(0, n - 1)}\u2026` : text;
}

// src/link.js
function parseFragment(hash2) {
  return Object.fromEntries(new URLSearchParams(String(hash2 ?? "").replace(/^#/, "")));
}
function canConnect(cfg) {
  return Boolean(cfg.api || cfg.bucket && cfg.ak && cfg.sk);
}
var VIEWS = ["overview", "tasks", "dead", "workers", "schedules", "workflow"];
var PAGES = [...VIEWS, "search"];
var PLACE_KEYS = ["api", "endpoint", "bucket", "region"];
var NAV_KEYS = ["view", "task", "search", "type", "workflow"];
var TYPE = /^[A-Za-z0-9_.:-]{1,64}$/;
var VIEWS_WITH_TASK = ["tasks", "dead", "search", "workflow"];
var TASK_ID2 = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
function workflowRef2(ref) {
  const r = String(ref ?? "");
  if (TASK_ID2.test(r.toLowerCase())) return r.toLowerCase();
  return TYPE.test(r) && /[^.]/.test(r) ? r : "";
}
function readLink(hash2) {
  const all = parseFragment(hash2);
  const cfg = Object.fromEntries(Object.entries(all).filter(([k]) => !NAV_KEYS.includes(k)));
  const task = TASK_ID2.test(all.task || "") ? all.task : "";
  const search2 = (all.search || "").trim().slice(0, 400);
  let view = PAGES.includes(all.view) ? all.view : "";
  if (search2 && !view) view = "search";
  if (view === "search" && !search2) view = "";
  const type = TYPE.test(all.type || "") && /[^.]/.test(all.type) && (view === "dead" || !view) ? all.type : "";
  if (type && !view) view = "dead";
  let workflow2 = workflowRef2(all.workflow);
  if (workflow2 && !view) view = "workflow";
  if (view !== "workflow") workflow2 = "";
  if (task && !VIEWS_WITH_TASK.includes(view)) view = "tasks";
  return { cfg, nav: { view, task, search: view === "search" ? search2 : "", type, workflow: workflow2 } };
}
var enc = (v) => encodeURIComponent(v).replace(/%2F/gi, "/").replace(/%3A/gi, ":");
function navFragment(cfg, { view = "overview", task = "", search: search2 = "", type = "", workflow: workflow2 = "" } = {}) {
  const parts = PLACE_KEYS.filter((k) => cfg[k]).map((k) => `${k}=${enc(cfg[k])}`);
  parts.push(`view=${enc(view)}`);
  if (view === "search" && search2) parts.push(`search=${enc(search2)}`);
  if (view === "dead" && type) parts.push(`type=${enc(type)}`);
  if (view === "workflow" && workflow2) parts.push(`workflow=${enc(workflow2)}`);
  if (task) parts.push(`task=${enc(task)}`);
  return `#${parts.join("&")}`;
}
function isNavigation(linkCfg, cfg) {
  if (Object.keys(linkCfg).some((k) => !PLACE_KEYS.includes(k))) return false;
  return PLACE_KEYS.every((k) => !linkCfg[k] || linkCfg[k] === cfg[k]);
}

// src/state.js
var fresh = () => ({
  shards: [],
  shardChars: 1,
  filter: { shard: "", status: "", type: "" },
  cursors: [""],
  page: 0,
  tasks: [],
  next: "",
  since: "",
  malformed: [],
  selected: null,
  detail: null,
  payloads: null,
  events: [],
  marks: [],
  workers: [],
  schedules: [],
  control: null,
  error: "",
  flash: "",
  // The overview: the last stats, and every minute of throughput seen
  // since connecting (the stats hold 15; the chart shows up to 60).
  stats: null,
  history: /* @__PURE__ */ new Map(),
  // The fleet's request rate: the stats answer it was last computed
  // from (worker_requests and at), and the rate.
  fleet: null,
  // The search box's last query ({text, q}) and its results.
  search: null,
  // Task lists: the checked tasks, and the bulk action planned or under
  // way ({op, plan, running, stop, progress, made}).
  checked: /* @__PURE__ */ new Set(),
  bulk: null,
  pendingPlan: null,
  // Workflows: the one shown (its id or name, '' for the list of names),
  // its last report ({ref, rep, made}), the names, and the names of the
  // workflows seen, by id (for a step's link in the task detail).
  workflow: "",
  wf: null,
  wfNames: null,
  wfNameOf: /* @__PURE__ */ new Map(),
  refreshedAt: null,
  failedAt: null,
  loading: false,
  reload: false
});
var state = {
  backend: null,
  cfg: {},
  view: "overview",
  refreshTimer: null,
  tickTimer: null,
  pendingNav: null,
  // gen counts connections: a load that began under an earlier one (other
  // bucket, other credentials) drops its result.
  gen: 0,
  ...fresh()
};
var Stale = class extends Error {
};
function current(gen) {
  if (gen !== state.gen) throw new Stale("the page moved to another link");
}
function readOnly() {
  return state.cfg.ro === "1";
}
var READ_ONLY = "this link is read-only: get one that may act with qo ui url --operator (or qo ui serve --operator)";

// src/chart.js
var MINUTE_MS = 6e4;
var CHART_MINUTES = 60;
function mergeRecent(history2, recent, keepMinutes = CHART_MINUTES) {
  let newest = -Infinity;
  for (const m of recent || []) {
    const start2 = Date.parse(m.start);
    if (Number.isNaN(start2)) continue;
    const at = start2 - start2 % MINUTE_MS;
    const had = history2.get(at);
    history2.set(at, {
      completed: Math.max(had?.completed ?? 0, m.completed || 0),
      failed: Math.max(had?.failed ?? 0, m.failed || 0)
    });
    newest = Math.max(newest, at);
  }
  if (newest > -Infinity) {
    for (const at of history2.keys()) if (at <= newest - keepMinutes * MINUTE_MS) history2.delete(at);
  }
  return history2;
}
function chartSeries(history2, nowMs, minutes = CHART_MINUTES) {
  const last = nowMs - nowMs % MINUTE_MS;
  const points = [];
  const totals = { completed: 0, failed: 0, minutes: 0 };
  let max = 0;
  for (let i = minutes - 1; i >= 0; i--) {
    const start2 = last - i * MINUTE_MS;
    const m = history2.get(start2);
    if (!m) {
      points.push(null);
      continue;
    }
    points.push({ start: start2, completed: m.completed, failed: m.failed });
    totals.completed += m.completed;
    totals.failed += m.failed;
    totals.minutes++;
    max = Math.max(max, m.completed + m.failed);
  }
  return { points, totals, max };
}
function niceMax(max) {
  if (!(max > 1)) return 1;
  const p = 10 ** Math.floor(Math.log10(max));
  for (const f of [1, 2, 5, 10]) if (f * p >= max) return f * p;
  return 10 * p;
}
function bars(series, width, height) {
  const top = niceMax(series.max);
  const n = series.points.length || 1;
  const step = width / n;
  const gap = Math.min(1, step / 4);
  const r = (v) => Math.round(v * 10) / 10;
  const out = { top, step: r(step), bars: [], unknown: [] };
  series.points.forEach((p, i) => {
    const x = i * step;
    if (!p) {
      const prev = out.unknown.at(-1);
      if (prev && prev.end === i) {
        prev.end = i + 1;
        prev.w = r((i + 1) * step - prev.x);
      } else {
        out.unknown.push({ x: r(x), w: r(step), end: i + 1 });
      }
      return;
    }
    const hc = p.completed / top * height;
    const hf = p.failed / top * height;
    const bar = { i, start: p.start, completed: p.completed, failed: p.failed, x: r(x + gap / 2), w: r(step - gap) };
    if (hc > 0) bar.c = { y: r(height - hc), h: r(hc) };
    if (hf > 0) bar.f = { y: r(height - hc - hf), h: r(hf) };
    out.bars.push(bar);
  });
  for (const u of out.unknown) delete u.end;
  return out;
}

// src/views/overview.js
function takeStats(st) {
  state.stats = st;
  mergeRecent(state.history, st.last_hour?.length ? st.last_hour : st.recent);
  if (st.request_rate) state.fleet = { perSec: st.request_rate.per_second, perHour: st.request_rate.dollars_per_hour };
}
function renderOverview(now) {
  const st = state.stats;
  if (!st) {
    $("#counts").replaceChildren(h("p", { class: "dim" }, "Counting tasks\u2026"));
    return;
  }
  renderCounts(st);
  renderChart(now);
  renderShardMap(st);
  renderTypes(st);
}
function renderCounts(st) {
  const atLeast = st.partial ? "\u2265 " : "";
  const card = (key, value, label, note) => h(
    "div",
    { class: `card ${key}`, "data-count": key },
    h("div", { class: "big" }, value),
    h("div", {}, label),
    h("div", { class: "dim small" }, note || " ")
  );
  const w = st.workers || {};
  const r = state.fleet;
  const rate = card(
    "requests",
    r ? `${r.perSec.toFixed(1)} req/s` : "-",
    "S3 requests",
    r ? `\u2248 ${dollars(r.perHour)}/hour` : "after the workers' next heartbeat"
  );
  rate.title = "The S3 requests the workers sent per second between their last two heartbeats, from the counters in them (as qo tui shows them), and what an hour at that rate costs at AWS S3 Standard list prices ($0.005 per 1,000 PUT or LIST, $0.0004 per 1,000 GET, DELETE free). This page's own requests are not counted.";
  $("#counts").replaceChildren(
    ...COUNTED.map((status) => card(
      status,
      `${atLeast}${fmt(st.by_status?.[status])}`,
      status,
      status === "pending" ? `${fmt(st.delayed)} delayed or in backoff` : status === "failed" ? "dead letters" : status === "waiting" ? "for their parents to end" : "holding a lease"
    )),
    card(
      "oldest",
      st.oldest_pending_age_seconds > 0 ? short(st.oldest_pending_age_seconds * 1e3) : "-",
      "oldest pending",
      st.oldest_pending_age_seconds > 0 ? "of an available task" : "nothing pending"
    ),
    card("workers", fmt(w.active), "workers active", `${fmt(w.stale)} stale \xB7 ${fmt(w.dead)} dead`),
    rate
  );
  const unserved2 = (st.unserved || []).map((u) => `${u.type}: ${fmt(u.pending)} pending, ${u.reason}`);
  $("#partial").textContent = [
    st.partial ? "Counts are lower bounds: an index holds more entries than one refresh reads." : "",
    unserved2.length ? `Nothing runs ${unserved2.join("; ")}.` : ""
  ].filter(Boolean).join(" ");
}
var CHART = { w: 600, h: 120, left: 40, top: 8, bottom: 22 };
function renderChart(clock) {
  const now = new Date(Math.max(clock.getTime(), Date.parse(state.stats?.at) || 0));
  const series = chartSeries(state.history, now.getTime());
  const b = bars(series, CHART.w, CHART.h);
  const x0 = CHART.left;
  const y0 = CHART.top;
  const hhmm = (ms) => new Date(ms).toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });
  const grid = [b.top, Number.isInteger(b.top / 2) ? b.top / 2 : null, 0].filter((v) => v != null).map((v) => {
    const y = y0 + CHART.h - v / b.top * CHART.h;
    return [
      s("line", { class: "grid", x1: x0, x2: x0 + CHART.w, y1: y, y2: y }),
      s("text", { class: "axis", x: x0 - 4, y: y + 4, "text-anchor": "end" }, fmt(v))
    ];
  });
  const last = now.getTime() - now.getTime() % MINUTE_MS;
  const xlabels = [[0, "60 min ago"], [30, "30 min ago"], [59, hhmm(last)]].map(([i, label]) => s("text", {
    class: "axis",
    x: x0 + i * b.step + b.step / 2,
    y: y0 + CHART.h + 16,
    "text-anchor": i === 0 ? "start" : i === 59 ? "end" : "middle"
  }, label));
  const unknown = b.unknown.map((u) => s(
    "rect",
    { class: "unknown", x: x0 + u.x, y: y0, width: u.w, height: CHART.h },
    s("title", {}, "not seen yet: the stats hold the last hour from the monitor's rollup (15 minutes from an older qo serve), and the page keeps what it saw since it opened")
  ));
  const columns = b.bars.map((bar) => s(
    "g",
    { class: "minute" },
    s("title", {}, `${hhmm(bar.start)}: ${fmt(bar.completed)} completed, ${fmt(bar.failed)} failed attempts`),
    // A transparent full-height rect makes the whole minute hoverable.
    s("rect", { class: "hover", x: x0 + bar.x, y: y0, width: bar.w, height: CHART.h }),
    bar.c ? s("rect", { class: "completed", x: x0 + bar.x, y: y0 + bar.c.y, width: bar.w, height: bar.c.h }) : null,
    bar.f ? s("rect", { class: "failed", x: x0 + bar.x, y: y0 + bar.f.y, width: bar.w, height: bar.f.h }) : null
  ));
  $("#chart").replaceChildren(s("svg", {
    viewBox: `0 0 ${CHART.left + CHART.w + 4} ${CHART.top + CHART.h + CHART.bottom}`,
    role: "img",
    "aria-label": `Tasks completed and failed per minute over the last hour: ${series.totals.completed} completed, ${series.totals.failed} failed`
  }, grid, xlabels, unknown, columns));
  const { completed, failed, minutes } = series.totals;
  const rate = completed + failed > 0 ? ` (${(100 * failed / (completed + failed)).toFixed(1)}% of attempts, retries included)` : "";
  const day = (state.stats?.last_day || []).reduce((a, m) => ({ c: a.c + (m.completed || 0), f: a.f + (m.failed || 0) }), { c: 0, f: 0 });
  $("#chart-legend").replaceChildren(
    h("span", { class: "key completed" }, `completed ${fmt(completed)}`),
    " ",
    h("span", { class: "key failed" }, `failed attempts ${fmt(failed)}${rate}`),
    " ",
    h("span", { class: "dim" }, minutes ? `over the ${minutes} minute${minutes === 1 ? "" : "s"} seen; ${(completed / minutes).toFixed(1)}/min completed` : "no minute seen yet"),
    state.stats?.last_day?.length ? h("span", { class: "dim" }, ` \xB7 last ${state.stats.last_day.length} h: ${fmt(day.c)} completed, ${fmt(day.f)} failed attempts`) : ""
  );
}
function renderShardMap(st) {
  const cells = state.shards.map((shard) => {
    const c = st.by_shard?.[shard] || {};
    const backlog = (c.pending || 0) + (c.running || 0);
    const cls = c.failed ? "has-failed" : c.running ? "has-running" : backlog ? "has-pending" : "empty";
    return h("button", {
      class: `shard ${cls}`,
      "data-shard": shard,
      title: `shard ${shard}: ${fmt(c.pending)} pending, ${fmt(c.running)} running, ${fmt(c.failed)} failed`,
      onclick: () => {
        state.filter.shard = shard;
        $("#shard").value = shard;
        go("tasks");
      }
    }, backlog > 99 ? "99+" : backlog ? String(backlog) : c.failed ? "!" : "\xB7");
  });
  const map = $("#shardmap");
  map.style.setProperty("--cols", String(Math.min(16, state.shards.length || 1)));
  map.replaceChildren(...cells);
  const top = Object.entries(st.by_shard || {}).map(([shard, c]) => [shard, c, (c.pending || 0) + (c.running || 0) + (c.failed || 0)]).filter(([, , n]) => n > 0).sort((a, b) => b[2] - a[2] || a[0].localeCompare(b[0])).slice(0, 4);
  $("#busiest").textContent = top.length ? `busiest: ${top.map(([shard, c]) => `${shard} p${c.pending || 0} r${c.running || 0} f${c.failed || 0}`).join(" \xB7 ")}` : "every shard is empty";
}
function renderTypes(st) {
  const c = state.control || {};
  const pausedTypes = c.paused_types || {};
  const limits = c.limits || {};
  const keyLimits = c.key_limits || {};
  const types = [.../* @__PURE__ */ new Set([...Object.keys(st.by_type || {}), ...Object.keys(pausedTypes), ...Object.keys(limits), ...Object.keys(keyLimits)])].sort();
  const rows = types.map((type) => {
    const n = st.by_type?.[type] || {};
    const own = Object.hasOwn(pausedTypes, type);
    const age = st.oldest_pending_age_seconds_by_type?.[type];
    const state_ = own ? `paused${pausedTypes[type].reason ? ` (${pausedTypes[type].reason})` : ""}` : c.paused ? "paused (whole queue)" : "active";
    return h(
      "tr",
      { class: "type", "data-type": type },
      h("td", { class: "mono", title: type }, type),
      h("td", { class: "num pending" }, fmt(n.pending)),
      h("td", { class: "num running" }, fmt(n.running)),
      // A type's failed count opens its dead letters (where they can be
      // replayed or archived together).
      h("td", { class: "num failed" }, n.failed ? h("a", { href: navFragment(state.cfg, { view: "dead", type }), title: `the dead letters of ${type}` }, fmt(n.failed)) : fmt(n.failed)),
      h("td", { class: "oldest" }, age >= 0 ? short(age * 1e3) : "-"),
      h("td", { class: "limit" }, limitsText(limits[type], keyLimits[type]) || "-"),
      h("td", { class: `pause-state ${own || c.paused ? "warn" : "dim"}` }, state_),
      h("td", {}, h("button", {
        class: "toggle",
        "aria-label": `${own ? "resume" : "pause"} type ${type}`,
        disabled: Boolean(c.error) || readOnly(),
        title: readOnly() ? READ_ONLY : "",
        onclick: () => togglePause(type, own)
      }, own ? "Resume" : "Pause"))
    );
  });
  $("#types").replaceChildren(...rows.length ? rows : [h("tr", {}, h("td", { colspan: 8, class: "dim" }, "no task waits, runs or failed"))]);
  const all = $("#pause-all");
  all.textContent = c.paused ? "Resume the whole queue" : "Pause the whole queue";
  all.disabled = Boolean(c.error) || readOnly();
  all.title = readOnly() ? READ_ONLY : "";
}
async function togglePause(type, paused) {
  const what = type ? `type ${type}` : "the whole queue";
  const question = paused ? `Resume ${what}? Workers start claiming ${type ? "its" : "all"} tasks again.` : `Pause ${what}? Workers stop claiming ${type ? "its" : "any"} tasks; running ones finish, and submits still queue.`;
  if (!confirm(question)) return;
  if (await action(() => state.backend.setPause(paused ? "resume" : "pause", type, "from the web UI"))) {
    state.flash = `${paused ? "resumed" : "paused"} ${what}`;
  }
}
async function load(gen, backend) {
  const st = await backend.stats();
  current(gen);
  takeStats(st);
  state.malformed = st.malformed || [];
}
function wire() {
  $("#pause-all").addEventListener("click", () => togglePause("", Boolean(state.control?.paused)));
}
var overview = { load, render: renderOverview, wire };

// src/views/schedules.js
function renderSchedules(now) {
  const rows = state.schedules.map((s2) => h(
    "tr",
    { class: "schedule" },
    h("td", { class: "mono" }, s2.name),
    h("td", { class: "mono" }, s2.cron),
    h("td", {}, s2.timezone),
    h("td", {}, s2.task?.task_type),
    h("td", {}, s2.enabled ? "enabled" : "disabled"),
    // next_due comes from the HTTP API, which evaluates the cron fields;
    // reading the bucket directly, the page does not.
    h("td", {}, s2.next_due ? ago(s2.next_due, now) : "-"),
    h("td", {}, s2.last_due ? ago(s2.last_due, now) : "-"),
    h("td", { class: "mono", title: s2.last_task_id || "" }, s2.last_task_id ? shortID(s2.last_task_id) : "-"),
    h("td", { class: "num" }, s2.skipped || 0),
    h("td", { class: "actions" }, scheduleButtons(s2))
  ));
  $("#schedules").replaceChildren(...rows.length ? rows : [h("tr", {}, h("td", { colspan: 10, class: "dim" }, "no schedules (qo schedule create)"))]);
}
function scheduleButtons(s2) {
  const backend = state.backend;
  if (readOnly()) return h("span", { class: "dim small", title: READ_ONLY }, "read-only");
  if (!backend?.scheduleAction) {
    return h("span", { class: "dim small", title: "open the page through qo serve to act here" }, `qo schedule ${s2.enabled ? "disable" : "enable"}|trigger|delete ${s2.name}`);
  }
  const act2 = (op, question) => async () => {
    if (!window.confirm(question)) return;
    const ok = await action(() => backend.scheduleAction(op, s2.name));
    if (ok) state.flash = `${op === "delete" ? "deleted" : `${op}${op.endsWith("e") ? "d" : "ed"}`} schedule ${s2.name}`;
    renderStatus();
  };
  return [
    s2.enabled ? h("button", { class: "small", "data-op": "disable", onclick: act2("disable", `Disable schedule ${s2.name}? It submits nothing until enabled.`) }, "Disable") : h("button", { class: "small", "data-op": "enable", onclick: act2("enable", `Enable schedule ${s2.name}? It submits its next due run.`) }, "Enable"),
    h("button", { class: "small", "data-op": "trigger", onclick: act2("trigger", `Trigger schedule ${s2.name} now? It submits one run at once.`) }, "Trigger"),
    h("button", { class: "small", "data-op": "delete", onclick: act2("delete", `Delete schedule ${s2.name}? Tasks it submitted stay.`) }, "Delete")
  ];
}
async function load2(gen, backend) {
  const s2 = await backend.schedules();
  current(gen);
  state.schedules = s2.schedules;
  state.malformed = s2.malformed;
}
var schedules = { load: load2, render: renderSchedules, wire() {
} };

// node_modules/diff/libesm/diff/base.js
var Diff = class {
  diff(oldStr, newStr, options = {}) {
    let callback;
    if (typeof options === "function") {
      callback = options;
      options = {};
    } else if ("callback" in options) {
      callback = options.callback;
    }
    const oldString = this.castInput(oldStr, options);
    const newString = this.castInput(newStr, options);
    const oldTokens = this.removeEmpty(this.tokenize(oldString, options));
    const newTokens = this.removeEmpty(this.tokenize(newString, options));
    return this.diffWithOptionsObj(oldTokens, newTokens, options, callback);
  }
  diffWithOptionsObj(oldTokens, newTokens, options, callback) {
    var _a;
    const done = (value) => {
      value = this.postProcess(value, options);
      if (callback) {
        setTimeout(function() {
          callback(value);
        }, 0);
        return void 0;
      } else {
        return value;
      }
    };
    const newLen = newTokens.length, oldLen = oldTokens.length;
    let editLength = 1;
    let maxEditLength = newLen + oldLen;
    if (options.maxEditLength != null) {
      maxEditLength = Math.min(maxEditLength, options.maxEditLength);
    }
    const maxExecutionTime = (_a = options.timeout) !== null && _a !== void 0 ? _a : Infinity;
    const abortAfterTimestamp = Date.now() + maxExecutionTime;
    const bestPath = [{ oldPos: -1, lastComponent: void 0 }];
    let newPos = this.extractCommon(bestPath[0], newTokens, oldTokens, 0, options);
    if (bestPath[0].oldPos + 1 >= oldLen && newPos + 1 >= newLen) {
      return done(this.buildValues(bestPath[0].lastComponent, newTokens, oldTokens));
    }
    let minDiagonalToConsider = -Infinity, maxDiagonalToConsider = Infinity;
    const execEditLength = () => {
      for (let diagonalPath = Math.max(minDiagonalToConsider, -editLength); diagonalPath <= Math.min(maxDiagonalToConsider, editLength); diagonalPath += 2) {
        let basePath;
        const removePath = bestPath[diagonalPath - 1], addPath = bestPath[diagonalPath + 1];
        if (removePath) {
          bestPath[diagonalPath - 1] = void 0;
        }
        let canAdd = false;
        if (addPath) {
          const addPathNewPos = addPath.oldPos - diagonalPath;
          canAdd = addPath && 0 <= addPathNewPos && addPathNewPos < newLen;
        }
        const canRemove = removePath && removePath.oldPos + 1 < oldLen;
        if (!canAdd && !canRemove) {
          bestPath[diagonalPath] = void 0;
          continue;
        }
        if (!canRemove || canAdd && removePath.oldPos < addPath.oldPos) {
          basePath = this.addToPath(addPath, true, false, 0, options);
        } else {
          basePath = this.addToPath(removePath, false, true, 1, options);
        }
        newPos = this.extractCommon(basePath, newTokens, oldTokens, diagonalPath, options);
        if (basePath.oldPos + 1 >= oldLen && newPos + 1 >= newLen) {
          return done(this.buildValues(basePath.lastComponent, newTokens, oldTokens)) || true;
        } else {
          bestPath[diagonalPath] = basePath;
          if (basePath.oldPos + 1 >= oldLen) {
            maxDiagonalToConsider = Math.min(maxDiagonalToConsider, diagonalPath - 1);
          }
          if (newPos + 1 >= newLen) {
            minDiagonalToConsider = Math.max(minDiagonalToConsider, diagonalPath + 1);
          }
        }
      }
      editLength++;
    };
    if (callback) {
      (function exec() {
        setTimeout(function() {
          if (editLength > maxEditLength || Date.now() > abortAfterTimestamp) {
            return callback(void 0);
          }
          if (!execEditLength()) {
            exec();
          }
        }, 0);
      })();
    } else {
      while (editLength <= maxEditLength && Date.now() <= abortAfterTimestamp) {
        const ret = execEditLength();
        if (ret) {
          return ret;
        }
      }
    }
  }
  addToPath(path, added, removed, oldPosInc, options) {
    const last = path.lastComponent;
    if (last && !options.oneChangePerToken && last.added === added && last.removed === removed) {
      return {
        oldPos: path.oldPos + oldPosInc,
        lastComponent: { count: last.count + 1, added, removed, previousComponent: last.previousComponent }
      };
    } else {
      return {
        oldPos: path.oldPos + oldPosInc,
        lastComponent: { count: 1, added, removed, previousComponent: last }
      };
    }
  }
  extractCommon(basePath, newTokens, oldTokens, diagonalPath, options) {
    const newLen = newTokens.length, oldLen = oldTokens.length;
    let oldPos = basePath.oldPos, newPos = oldPos - diagonalPath, commonCount = 0;
    while (newPos + 1 < newLen && oldPos + 1 < oldLen && this.equals(oldTokens[oldPos + 1], newTokens[newPos + 1], options)) {
      newPos++;
      oldPos++;
      commonCount++;
      if (options.oneChangePerToken) {
        basePath.lastComponent = { count: 1, previousComponent: basePath.lastComponent, added: false, removed: false };
      }
    }
    if (commonCount && !options.oneChangePerToken) {
      basePath.lastComponent = { count: commonCount, previousComponent: basePath.lastComponent, added: false, removed: false };
    }
    basePath.oldPos = oldPos;
    return newPos;
  }
  equals(left, right, options) {
    if (options.comparator) {
      return options.comparator(left, right);
    } else {
      return left === right || !!options.ignoreCase && left.toLowerCase() === right.toLowerCase();
    }
  }
  removeEmpty(array) {
    const ret = [];
    for (let i = 0; i < array.length; i++) {
      if (array[i]) {
        ret.push(array[i]);
      }
    }
    return ret;
  }
  // eslint-disable-next-line @typescript-eslint/no-unused-vars
  castInput(value, options) {
    return value;
  }
  // eslint-disable-next-line @typescript-eslint/no-unused-vars
  tokenize(value, options) {
    return Array.from(value);
  }
  join(chars) {
    return chars.join("");
  }
  postProcess(changeObjects, options) {
    return changeObjects;
  }
  get useLongestToken() {
    return false;
  }
  buildValues(lastComponent, newTokens, oldTokens) {
    const components = [];
    let nextComponent;
    while (lastComponent) {
      components.push(lastComponent);
      nextComponent = lastComponent.previousComponent;
      delete lastComponent.previousComponent;
      lastComponent = nextComponent;
    }
    components.reverse();
    const componentLen = components.length;
    let componentPos = 0, newPos = 0, oldPos = 0;
    for (; componentPos < componentLen; componentPos++) {
      const component = components[componentPos];
      if (!component.removed) {
        if (!component.added && this.useLongestToken) {
          let value = newTokens.slice(newPos, newPos + component.count);
          value = value.map(function(value2, i) {
            const oldValue = oldTokens[oldPos + i];
            return oldValue.length > value2.length ? oldValue : value2;
          });
          component.value = this.join(value);
        } else {
          component.value = this.join(newTokens.slice(newPos, newPos + component.count));
        }
        newPos += component.count;
        if (!component.added) {
          oldPos += component.count;
        }
      } else {
        component.value = this.join(oldTokens.slice(oldPos, oldPos + component.count));
        oldPos += component.count;
      }
    }
    return components;
  }
};

// node_modules/diff/libesm/diff/line.js
var LineDiff = class extends Diff {
  constructor() {
    super(...arguments);
    this.tokenize = tokenize;
  }
  equals(left, right, options) {
    if (options.ignoreWhitespace) {
      if (!options.newlineIsToken || !left.includes("\n")) {
        left = left.trim();
      }
      if (!options.newlineIsToken || !right.includes("\n")) {
        right = right.trim();
      }
    } else if (options.ignoreNewlineAtEof && !options.newlineIsToken) {
      if (left.endsWith("\n")) {
        left = left.slice(0, -1);
      }
      if (right.endsWith("\n")) {
        right = right.slice(0, -1);
      }
    }
    return super.equals(left, right, options);
  }
};
var lineDiff = new LineDiff();
function diffLines(oldStr, newStr, options) {
  return lineDiff.diff(oldStr, newStr, options);
}
function tokenize(value, options) {
  if (options.stripTrailingCr) {
    value = value.replace(/\r\n/g, "\n");
  }
  const retLines = [], linesAndNewlines = value.split(/(\n|\r\n)/);
  if (!linesAndNewlines[linesAndNewlines.length - 1]) {
    linesAndNewlines.pop();
  }
  for (let i = 0; i < linesAndNewlines.length; i++) {
    const line = linesAndNewlines[i];
    if (i % 2 && !options.newlineIsToken) {
      retLines[retLines.length - 1] += line;
    } else {
      retLines.push(line);
    }
  }
  return retLines;
}

// src/views/detail.js
async function workflowName(backend, id) {
  if (state.wfNameOf.has(id)) return state.wfNameOf.get(id);
  let name = "";
  try {
    name = await backend.workflowRecordName(id) || "";
  } catch {
  }
  state.wfNameOf.set(id, name);
  return name;
}
async function loadDetail(id) {
  const gen = state.gen;
  const backend = state.backend;
  const { task } = await backend.viewTask(id, state.shardChars);
  if (task.workflow?.id) await workflowName(backend, task.workflow.id);
  const payloads = await backend.payloads(task).catch((e) => ({ error: e.message }));
  const events = await backend.history(task);
  const progress = await backend.taskProgress(task).catch(() => null);
  current(gen);
  if (state.selected !== id) return;
  Object.assign(state, { detail: task, payloads, events, progress });
}
function renderDetail(now) {
  const box = $("#detail");
  const t = state.detail;
  if (!t || t.id !== state.selected) {
    box.replaceChildren(h("p", { class: "dim" }, state.view === "workflow" ? "Click a step to see its task: fields, data and history." : "Select a task to see its fields, data and history."));
    return;
  }
  const actions = readOnly() ? [h("span", { id: "act-readonly", class: "dim small" }, READ_ONLY)] : [["replay", "Replay"], ["archive", "Archive"], ["cancel", "Cancel"]].filter(([op]) => canAct(op, t.status)).map(([op, label]) => h("button", { id: `act-${op}`, onclick: () => act(op, t) }, label));
  const timeline = state.events.map((e, i) => h(
    "tr",
    { class: "version" },
    h("td", {}, h("input", {
      type: "checkbox",
      "aria-label": `compare version ${i + 1}`,
      checked: state.marks.includes(i),
      onchange: () => mark(i)
    })),
    h("td", {}, `v${i + 1}`),
    h("td", {}, e.at ? new Date(e.at).toISOString().replace("T", " ").slice(0, 19) : "-"),
    h("td", {}, e.event, e.task?.actor ? h("span", { class: "dim small actor" }, ` by ${e.task.actor}`) : ""),
    h("td", {}, e.status || ""),
    h("td", { class: "num" }, e.attempt ?? ""),
    h("td", {}, e.worker_id || "-"),
    h("td", { class: "error" }, e.error || "")
  ));
  box.replaceChildren(
    h("h2", { class: "mono" }, t.id),
    h("div", { class: "actions" }, actions, h("button", { id: "copy-id", title: "copy the full id", onclick: () => copyID(t.id) }, "Copy id"), h("a", { class: "permalink", href: navFragment(state.cfg, { view: state.view, task: t.id, search: state.search?.text, type: state.filter.type, workflow: state.workflow }) }, "link to this task")),
    h(
      "table",
      { class: "fields" },
      field("type", t.task_type),
      field("status", h("span", { class: `st ${t.status}` }, t.status)),
      field("priority", priorityOf(t)),
      field("shard", t.shard),
      field("attempt", `${t.attempt} (retries ${t.retry_count} of ${t.max_retries})`),
      field("rev", t.rev),
      field("created", t.created_at),
      field("updated", `${t.updated_at} (${ago(t.updated_at, now)})`),
      field("available", t.available_at),
      field("lease expires", t.lease_expires_at),
      field("worker", t.worker_id || "-"),
      state.progress ? field("progress", h("span", { id: "progress" }, progressText(state.progress), state.progress.at ? ` (reported ${ago(state.progress.at, now)})` : "")) : null,
      t.expires_at ? field("expires", `${t.expires_at} (${ago(t.expires_at, now)})`) : null,
      field("timeout", `${t.timeout_seconds}s`),
      field("last event", t.last_event),
      field("idempotency key", t.idempotency_key || "-"),
      t.cancel_requested ? field("cancel", `requested: ${t.cancel_reason || "-"}`) : null,
      t.metadata && typeof t.metadata === "object" ? field("metadata", Object.keys(t.metadata).sort().map((k) => `${k}=${t.metadata[k]}`).join(" ")) : null,
      t.last_error ? field("last error", h("span", { class: "error" }, t.last_error)) : null,
      ...workflowFields(t)
    ),
    h("h3", {}, "Data"),
    h("div", { id: "data" }, dataView(t)),
    h(
      "h3",
      {},
      `Timeline (${state.events.length} versions)`,
      " ",
      h("button", { id: "diff-btn", disabled: state.marks.length !== 2, onclick: showDiff }, "Diff the two checked versions")
    ),
    h("div", { class: "scroll" }, h("table", { id: "timeline" }, h("tr", {}, ["", "", "at", "event", "status", "attempt", "worker", ""].map((c) => h("th", {}, c))), timeline)),
    h("pre", { id: "diff", hidden: true })
  );
}
function taskHref(id) {
  return state.view === "workflow" ? navFragment(state.cfg, { view: "workflow", workflow: state.workflow, task: id }) : navFragment(state.cfg, { view: "tasks", task: id });
}
function workflowFields(t) {
  const rep = state.wf?.rep;
  const stepOf = (id) => rep?.steps.find((s2) => s2.task_id === id)?.name;
  const named = (id) => stepOf(id) ? `${stepOf(id)} (${shortID(id)})` : shortID(id);
  const out = [];
  if (t.workflow?.id) {
    const name = state.wfNameOf.get(t.workflow.id) || shortID(t.workflow.id);
    out.push(field("workflow", h(
      "a",
      { id: "wf-link", href: navFragment(state.cfg, { view: "workflow", workflow: t.workflow.id, task: t.id }) },
      `workflow ${name} \xB7 step ${t.workflow.step}`
    )));
  }
  if (t.parents?.length) {
    out.push(field("parents", h("ul", { class: "links", id: "parents" }, t.parents.map((p) => h(
      "li",
      { "data-id": p.id },
      h("a", { class: "mono", href: taskHref(p.id), title: p.id }, named(p.id)),
      " ",
      p.done ? h("span", { class: `st ${p.done}` }, p.done) : h("span", { class: "dim" }, "not ended yet")
    )))));
    if (t.on_parent_failure) out.push(field("if a parent fails", t.on_parent_failure));
  }
  if (t.children?.length) {
    out.push(field("children", h("ul", { class: "links", id: "children" }, t.children.map((c) => h(
      "li",
      { "data-id": c },
      h("a", { class: "mono", href: taskHref(c), title: c }, named(c))
    )))));
  }
  const from = Object.entries(t.input_from || {}).sort(([a], [b]) => a.localeCompare(b));
  if (from.length) {
    out.push(field("input from", h("ul", { class: "links", id: "input-from" }, from.map(([f, src]) => {
      const has = Object.hasOwn(t.from_parents || {}, f);
      return h(
        "li",
        { "data-field": f },
        h("span", { class: "jkey" }, f),
        " = ",
        h("span", { class: "mono" }, `${stepOf(src.parent) || shortID(src.parent)}.output${src.path ? `.${src.path}` : ""}`),
        ": ",
        has ? h("span", { class: "mono" }, JSON.stringify(t.from_parents[f])) : h("span", { class: "dim" }, "not taken yet")
      );
    }))));
  }
  return out;
}
function dataView(t) {
  const p = state.payloads || {};
  const part2 = (name, inline, ref) => {
    const note = ref ? h("p", { class: "dim offloaded" }, `${name} offloaded: ${ref.bytes} bytes in ${ref.key}`) : null;
    if (ref && p.error) return [note, h("p", { class: "error" }, `${name} not loaded: ${p.error}`)];
    return [note, jsonTree(name, ref ? p[name] : inline)];
  };
  return [...part2("input", t.input, t.input_ref), ...part2("output", t.output, t.output_ref)];
}
function mark(i) {
  state.marks = state.marks.includes(i) ? state.marks.filter((m) => m !== i) : [...state.marks, i].slice(-2);
  renderDetail(state.backend.now());
}
function showDiff() {
  const [a, b] = [...state.marks].sort((x, y) => x - y);
  const text = (e) => e.task ? `${JSON.stringify(e.task, null, 2)}
` : `(${e.event})
`;
  const pre = $("#diff");
  pre.replaceChildren(
    h("div", {}, `--- v${a + 1} ${state.events[a].event}`),
    h("div", {}, `+++ v${b + 1} ${state.events[b].event}`),
    ...diffLines(text(state.events[a]), text(state.events[b])).flatMap((part2) => part2.value.replace(/\n$/, "").split("\n").map((line) => {
      const sign = part2.added ? "+" : part2.removed ? "-" : " ";
      return h("div", { class: part2.added ? "add" : part2.removed ? "del" : "" }, `${sign} ${line}`);
    }))
  );
  pre.hidden = false;
}
async function copyID(id) {
  try {
    await navigator.clipboard.writeText(id);
    state.flash = `copied ${id}`;
  } catch (err) {
    const range = document.createRange();
    range.selectNodeContents($("#detail h2"));
    getSelection().removeAllRanges();
    getSelection().addRange(range);
    state.flash = `select and copy the id (the browser refused the clipboard: ${err.message})`;
  }
  render();
}
async function select(id) {
  const gen = state.gen;
  state.selected = id;
  state.marks = [];
  writeAddress(true);
  await guard(() => loadDetail(id));
  if (gen === state.gen) render();
}
async function act(op, t) {
  const children = op === "cancel" && t.status !== "running" && t.children?.length ? ` Its ${fmt(t.children.length)} ${t.children.length === 1 ? "child follows" : "children follow"} their "if a parent fails" rule (cancel by default).` : "";
  if (!confirm(`${op[0].toUpperCase()}${op.slice(1)} task ${t.id} (${t.task_type}, ${t.status})?${children}`)) return;
  await action(async () => {
    const next = await state.backend.act(op, t.id, state.shardChars);
    state.flash = `${op}: task ${t.id} is now ${next.status}`;
  });
}

// src/views/tasks.js
function setSearch(text) {
  if (!text) {
    state.search = null;
    return;
  }
  const q = parseSearch(text);
  state.search = { text: q.text || text, q, tasks: [], more: [], made: null, done: false };
  $("#search").value = state.search.text;
}
async function runSearch(gen, backend) {
  const sr = state.search;
  if (!sr || sr.q.error) return;
  const before = backend.requests();
  const r = await backend.search(sr.q);
  current(gen);
  if (state.search !== sr) return;
  const after = backend.requests();
  sr.tasks = r.tasks;
  sr.more = r.more;
  sr.made = Object.fromEntries(Object.entries(after).map(([op, n]) => [op, n - (before[op] || 0)]).filter(([, n]) => n > 0));
  sr.done = true;
  state.malformed = r.malformed || [];
  if (r.tasks.length === 1 && !state.selected) {
    state.selected = r.tasks[0].id;
    writeAddress(false);
  }
}
function listFilter() {
  return state.view === "dead" ? { shard: state.filter.shard, status: "failed", type: state.filter.type } : { shard: state.filter.shard, status: state.filter.status };
}
function checkable() {
  return (state.view === "tasks" || state.view === "dead") && !readOnly();
}
function shownTasks() {
  return state.view === "search" ? state.search?.tasks || [] : state.tasks;
}
var COLUMNS = ["id", "type", "priority", "status", "attempt", "updated", "next / lease"];
function renderTasks(now) {
  const dead = state.view === "dead";
  const boxes = checkable();
  const tasks2 = shownTasks();
  const busy = Boolean(state.bulk?.running);
  const columns = dead ? [...COLUMNS, "last error"] : COLUMNS;
  $("#tasks-head").replaceChildren(h(
    "tr",
    {},
    boxes ? h("th", { class: "check" }, h("input", {
      type: "checkbox",
      id: "check-all",
      "aria-label": "check every task on this page",
      disabled: busy || !tasks2.length,
      checked: tasks2.length > 0 && tasks2.every((t) => state.checked.has(t.id)),
      onchange: (e) => checkAll(e.target.checked)
    })) : null,
    columns.map((c) => h("th", {}, c))
  ));
  const rows = tasks2.map((t) => h(
    "tr",
    {
      class: `row ${t.id === state.selected ? "sel" : ""}`,
      "data-id": t.id,
      onclick: () => select(t.id)
    },
    boxes ? h("td", { class: "check", onclick: (e) => e.stopPropagation() }, h("input", {
      type: "checkbox",
      "aria-label": `check task ${t.id}`,
      checked: state.checked.has(t.id),
      disabled: busy,
      onchange: (e) => check(t.id, e.target.checked)
    })) : null,
    h("td", { class: "mono", title: t.id }, shortID(t.id)),
    h("td", {}, t.task_type),
    h("td", {}, h("span", { class: `prio ${priorityOf(t)}` }, priorityOf(t))),
    h("td", {}, h("span", { class: `st ${t.status}` }, t.status)),
    h("td", { class: "num" }, t.attempt),
    h("td", {}, ago(t.updated_at, now)),
    h("td", { "data-countdown": t.id }, countdown(t, now)),
    dead ? h("td", { class: "last-error", title: t.last_error || "" }, oneLine(t.last_error || "-")) : null
  ));
  const empty = state.view === "search" ? state.search?.done ? "nothing found" : "" : dead ? "no dead letters on this page" : "no tasks on this page";
  $("#tasks").replaceChildren(...rows.length ? rows : [h("tr", {}, h("td", { colspan: columns.length + (boxes ? 1 : 0), class: "dim" }, empty))]);
  $("#more").disabled = !state.next;
  $("#prev").disabled = state.page === 0;
  $("#page").textContent = `page ${state.page + 1}${state.since ? ` \xB7 created since ${new Date(state.since).toLocaleString()}` : ""}`;
  if (boxes) renderBulk();
  if (state.view === "search") renderSearchInfo();
  renderDetail(now);
}
function check(id, on) {
  if (on) state.checked.add(id);
  else state.checked.delete(id);
  renderTasks(state.backend.now());
}
function checkAll(on) {
  for (const t of state.tasks) {
    if (on) state.checked.add(t.id);
    else state.checked.delete(t.id);
  }
  renderTasks(state.backend.now());
}
function renderTypeMenu() {
  const counts = state.stats?.by_type || {};
  const types = new Set([...Object.keys(counts).filter((t) => counts[t].failed), ...state.tasks.map((t) => t.task_type), state.filter.type].filter(Boolean));
  const opts = [["", "all types"], ...[...types].sort().map((t) => [t, counts[t]?.failed ? `${t} (${fmt(counts[t].failed)})` : t])];
  const sel = $("#typef");
  const key = JSON.stringify(opts);
  if (sel.dataset.key !== key) {
    sel.replaceChildren(...opts.map(([v, label]) => h("option", { value: v }, label)));
    sel.dataset.key = key;
  }
  sel.value = state.filter.type;
}
function renderBulk() {
  const dead = state.view === "dead";
  if (dead) renderTypeMenu();
  const n = state.checked.size;
  const busy = Boolean(state.bulk?.running);
  $("#bulk-checked").textContent = `${fmt(n)} checked`;
  for (const op of BULK_BUTTON_OPS) $(`#bulk-${op}-checked`).disabled = busy || !n;
  $("#bulk-cancel-checked").hidden = dead;
  const type = state.filter.type;
  const counted = state.stats?.by_type?.[type]?.failed;
  if (dead) {
    $("#bulk-type-label").textContent = type ? `every failed task of type ${type}${counted ? ` (${fmt(counted)} counted)` : ""}:` : "choose a type to replay or archive all its failed tasks";
  } else {
    $("#bulk-type-label").textContent = `every task in this filter (${filterWords()}):`;
  }
  for (const op of BULK_BUTTON_OPS) {
    const b = $(`#bulk-${op}-type`);
    b.hidden = dead ? !type || op === "cancel" : false;
    b.disabled = busy;
  }
  renderBulkProgress();
}
var BULK_BUTTON_OPS = ["replay", "archive", "cancel"];
function filterWords() {
  const { status, shard } = state.filter;
  return `${status ? `status ${status}` : "every status but archived"}${shard ? `, shard ${shard}` : ""}`;
}
async function bulkCandidates(backend, scope) {
  if (scope === "checked") {
    const candidates = state.tasks.filter((t) => state.checked.has(t.id));
    return { candidates, found: null, partial: false };
  }
  if (state.view === "dead") return backend.deadOfType(state.filter.type);
  return backend.tasksInFilter(listFilter());
}
function bulkRequest(scope) {
  if (scope === "checked") return { ids: [...state.checked] };
  const { status, shard, type = "" } = listFilter();
  return { filter: { status: status ? [status] : [], shard, type } };
}
async function startBulk(op, scope) {
  const gen = state.gen;
  const backend = state.backend;
  if (!backend || state.bulk?.running) return;
  if (scope === "type" && state.view === "dead" && !state.filter.type) return;
  const n0 = state.checked.size;
  const what = scope === "checked" ? `the ${fmt(n0)} checked task${n0 === 1 ? "" : "s"}` : state.view === "dead" ? `every failed task of type ${state.filter.type}` : `every task in this filter (${filterWords()})`;
  let plan = null;
  if (scope !== "checked" || backend.kind === "API") {
    state.flash = `Finding ${what}\u2026`;
    renderStatus();
  }
  await guard(async () => {
    if (backend.kind === "API") {
      const req = bulkRequest(scope);
      plan = serverPlan(op, req, await backend.bulk(op, req, true));
    } else {
      const { candidates, found, partial } = await bulkCandidates(backend, scope);
      plan = planBulk({ op, mode: backend.kind, candidates, now: backend.now().toISOString(), found, partial });
    }
    current(gen);
  });
  if (!plan) return;
  state.flash = "";
  renderStatus();
  const verb = op[0].toUpperCase() + op.slice(1);
  const n = plan.items.length;
  $("#bulk-title").textContent = `${verb} ${what}?`;
  $("#bulk-cost").replaceChildren(h("strong", {}, `${fmt(n)} task${n === 1 ? "" : "s"}. Requests: `), plan.summary, h("span", { class: "dim" }, `; about ${plan.dollars} at S3 Standard prices.`));
  $("#bulk-how").textContent = `Each task gets exactly what ${verb} does to one task (and qo ${op}): it is read, the rule applied, and written back only if it did not change meanwhile (If-Match on its ETag). A task that changed and no longer allows it is reported and left as it is.${plan.server ? "" : ` ${BULK_CONCURRENCY} tasks at a time; Stop halts it.`}`;
  $("#bulk-skipped").replaceChildren(...plan.skipped.length ? [
    h("p", {}, `${fmt(plan.skipped.length)} skipped:`),
    h(
      "ul",
      { class: "failures" },
      plan.skipped.slice(0, 10).map((sk) => h("li", {}, h("span", { class: "mono" }, sk.id ? shortID(sk.id) : "-"), `: ${sk.reason}`)),
      plan.skipped.length > 10 ? h("li", { class: "dim" }, `and ${fmt(plan.skipped.length - 10)} more`) : null
    )
  ] : []);
  const go_ = $("#bulk-go");
  go_.textContent = `${verb} ${fmt(n)} task${n === 1 ? "" : "s"}`;
  go_.disabled = n === 0;
  state.pendingPlan = plan;
  const dialog = $("#bulk-dialog");
  dialog.returnValue = "";
  dialog.showModal();
  (n ? go_ : $("#bulk-cancel")).focus();
}
async function runBulkNow(plan) {
  const gen = state.gen;
  const backend = state.backend;
  const b = {
    op: plan.op,
    mode: backend.kind,
    plan,
    running: true,
    stop: false,
    made: null,
    progress: { total: plan.items.length, done: 0, ok: 0, failed: [], skipped: 0, stopped: false, notStarted: 0 }
  };
  state.bulk = b;
  state.flash = "";
  renderViews();
  renderBulk();
  renderTasks(backend.now());
  const before = backend.requests();
  let progress;
  if (plan.server) {
    progress = { ...b.progress };
    try {
      const ans = await backend.bulk(plan.op, plan.server, false);
      const failed = [...ans.failed || [], ...(ans.skipped || []).filter((s2) => /^changed meanwhile/.test(s2.reason))];
      Object.assign(progress, { done: plan.items.length, ok: (ans.done || []).length, failed: failed.map((f) => ({ id: f.id, error: f.reason })) });
    } catch (e) {
      Object.assign(progress, { stopped: true, notStarted: plan.items.length, failed: [{ id: "", error: String(e?.message ?? e) }] });
    }
  } else {
    progress = await runBulk(plan.items, (item) => backend.act(plan.op, item.id, state.shardChars), {
      onProgress: (p) => {
        b.progress = p;
        if (state.bulk === b) renderBulkProgress();
      },
      shouldStop: () => b.stop || gen !== state.gen
    });
  }
  if (gen !== state.gen) return;
  const after = backend.requests();
  b.made = Object.fromEntries(Object.entries(after).map(([op, n]) => [op, n - (before[op] || 0)]).filter(([, n]) => n > 0));
  b.progress = progress;
  b.running = false;
  state.checked.clear();
  state.flash = `${plan.op}: ${fmt(progress.ok)} of ${fmt(progress.total)} ${DONE[plan.op]}${progress.failed.length ? `, ${fmt(progress.failed.length)} failed` : ""}${progress.stopped ? " (stopped)" : ""}`;
  await refresh();
}
var DONE = { replay: "replayed", archive: "archived", cancel: "cancelled" };
var DOING = { replay: "Replaying", archive: "Archiving", cancel: "Cancelling" };
function renderBulkProgress() {
  const box = $("#bulk-progress");
  const b = state.bulk;
  box.hidden = !b || !checkable();
  if (!b) return;
  const p = b.progress;
  const verb = DONE[b.op];
  let head = `${DOING[b.op]}: ${fmt(p.done)} of ${fmt(p.total)} done`;
  if (!b.running) head = p.stopped ? `Stopped: ${fmt(p.done)} of ${fmt(p.total)} done, ${fmt(p.notStarted)} not started` : `Done: ${fmt(p.done)} of ${fmt(p.total)}`;
  box.replaceChildren(
    h(
      "div",
      { class: "progress-head" },
      h("strong", { id: "bulk-status" }, head),
      h("span", {}, ` \xB7 ${fmt(p.ok)} ${verb} \xB7 ${fmt(p.failed.length)} failed`),
      b.running ? h("button", { id: "bulk-stop", disabled: b.stop, onclick: () => {
        b.stop = true;
        renderBulkProgress();
      } }, b.stop ? "Stopping\u2026" : "Stop") : h("button", { id: "bulk-close", onclick: () => {
        state.bulk = null;
        renderBulkProgress();
      } }, "Close")
    ),
    h("progress", { max: Math.max(p.total, 1), value: p.done, "aria-label": `${p.done} of ${p.total} done` }),
    b.made ? h("p", { class: "dim small", id: "bulk-made" }, `Sent ${formatOps(b.made)}${b.mode === "API" ? " to qo serve" : ""} (planned: ${b.plan.summary}).`) : null,
    p.failed.length ? h("ul", { id: "bulk-failures", class: "failures" }, p.failed.map((f) => h(
      "li",
      { "data-id": f.id },
      h("a", { class: "mono", href: navFragment(state.cfg, { view: "tasks", task: f.id }) }, f.id),
      ": ",
      h("span", { class: "error" }, f.error)
    ))) : null
  );
}
function renderSearchInfo() {
  const box = $("#search-info");
  const sr = state.search;
  if (!sr) {
    box.replaceChildren(h("p", { class: "dim" }, "Press / to search."));
    return;
  }
  if (sr.q.error) {
    box.replaceChildren(h("p", { class: "warn", id: "search-error" }, sr.q.error));
    return;
  }
  const q = sr.q;
  const api = state.backend.kind === "API";
  const by = q.kind === "id" ? q.full ? "task id" : "id prefix" : q.kind === "type" ? "task type" : "idempotency key";
  const n = sr.tasks.length;
  let more = "";
  if (sr.more.includes("id")) more = ` (the first ${SEARCH_LIMIT}, oldest first: more match, give more of the id)`;
  else if (sr.more.length) more = ` (the first ${SEARCH_LIMIT} of each status; more are ${sr.more.join(", ")})`;
  const failed = q.kind === "type" && sr.tasks.some((t) => t.status === "failed");
  box.replaceChildren(
    h(
      "p",
      { id: "search-summary" },
      sr.done ? `${fmt(n)} task${n === 1 ? "" : "s"} found by ${by}${more}.` : "Searching\u2026",
      failed ? [" ", h("a", { href: navFragment(state.cfg, { view: "dead", type: q.type }) }, `dead letters of ${q.type}`)] : null
    ),
    h(
      "p",
      { class: "dim small", id: "search-cost" },
      `Cost: ${searchCost(q, api ? "API" : "S3", state.shards)}`,
      sr.made ? `; this search sent ${formatOps(sr.made)}${api ? " to qo serve" : ""}.` : "."
    ),
    searchNote(q, n) ? h("p", { class: "dim small", id: "search-note" }, searchNote(q, n)) : null
  );
}
async function loadList(gen, backend) {
  const filter = listFilter();
  const page = await backend.listTasks({ ...filter, cursor: state.cursors[state.page] });
  current(gen);
  state.tasks = page.tasks;
  state.next = page.next_cursor;
  state.since = page.since || "";
  state.malformed = page.malformed || [];
  const shown = new Set(page.tasks.map((t) => t.id));
  for (const id of state.checked) if (!shown.has(id)) state.checked.delete(id);
  if (state.view === "dead" && !state.stats) {
    const st = await backend.stats();
    current(gen);
    takeStats(st);
  }
  if (state.selected) await loadDetail(state.selected);
}
async function loadSearch(gen, backend) {
  await runSearch(gen, backend);
  if (state.selected) await loadDetail(state.selected);
}
function wire2() {
  $("#shard").addEventListener("change", (e) => {
    state.filter.shard = e.target.value;
    state.cursors = [""];
    state.page = 0;
    state.checked.clear();
    refresh();
  });
  $("#statusf").addEventListener("change", (e) => {
    state.filter.status = e.target.value;
    state.cursors = [""];
    state.page = 0;
    state.checked.clear();
    refresh();
  });
  $("#more").addEventListener("click", () => {
    state.cursors[state.page + 1] = state.next;
    state.page++;
    refresh();
  });
  $("#prev").addEventListener("click", () => {
    state.page = Math.max(0, state.page - 1);
    refresh();
  });
  $("#typef").addEventListener("change", (e) => go("dead", { type: e.target.value, push: false }));
  for (const op of BULK_BUTTON_OPS) {
    $(`#bulk-${op}-checked`).addEventListener("click", () => startBulk(op, "checked"));
    $(`#bulk-${op}-type`).addEventListener("click", () => startBulk(op, "type"));
  }
  $("#bulk-dialog").addEventListener("close", () => {
    const plan = state.pendingPlan;
    state.pendingPlan = null;
    if ($("#bulk-dialog").returnValue === "go" && plan && state.backend) runBulkNow(plan);
  });
  $("#search-form").addEventListener("submit", (e) => {
    e.preventDefault();
    if (!state.backend) return;
    const text = $("#search").value.trim();
    if (!text) return;
    $("#search").blur();
    setSearch(text);
    if (state.view === "search") state.selected = null;
    go("search", { search: state.search.text });
  });
  $("#search").addEventListener("keydown", (e) => {
    if (e.key === "Escape") e.target.blur();
  });
}
var tasks = { load: loadList, render: renderTasks, wire: wire2 };
var search = { load: loadSearch, render: renderTasks, wire() {
} };

// src/views/workers.js
function renderWorkers(now) {
  const rows = state.workers.map((w) => {
    const st = health(w.last_heartbeat, now.toISOString(), w.dead_after_seconds);
    return h(
      "tr",
      { class: "worker" },
      h("td", { class: "mono" }, w.worker_id),
      h("td", {}, h("span", { class: `health ${st}` }, st)),
      h("td", { class: "num" }, (w.current_tasks || []).length),
      h("td", { class: "num" }, w.tasks_completed),
      h("td", { class: "num" }, w.tasks_failed),
      h("td", {}, ago(w.last_heartbeat, now)),
      h("td", {}, ago(w.started_at, now)),
      h("td", {}, (w.shards || []).length ? w.shards.join(",") : "all"),
      h("td", {}, `${w.host || "-"} pid ${w.pid ?? "-"}`),
      h("td", { class: "small" }, st === "dead" ? "" : holdsText(w.holds))
    );
  });
  $("#workers").replaceChildren(...rows.length ? rows : [h("tr", {}, h("td", { colspan: 10, class: "dim" }, "no workers registered"))]);
}
async function load3(gen, backend) {
  const w = await backend.workers();
  current(gen);
  state.workers = w.workers;
  state.malformed = w.malformed;
}
var workers = { load: load3, render: renderWorkers, wire() {
} };

// src/views/workflow.js
async function loadWorkflow(gen, backend) {
  const ref = state.workflow;
  if (!ref) {
    const r = await backend.workflowNames();
    current(gen);
    state.wfNames = r;
    state.malformed = r.malformed || [];
    for (const w of r.workflows) state.wfNameOf.set(w.id, w.name);
    return;
  }
  const before = backend.requests();
  const rep = await backend.workflow(ref);
  current(gen);
  const after = backend.requests();
  if (state.workflow !== ref) return;
  const made = Object.fromEntries(Object.entries(after).map(([op, n]) => [op, n - (before[op] || 0)]).filter(([, n]) => n > 0));
  state.wf = { ref, rep, made };
  state.malformed = [];
  if (rep.name) state.wfNameOf.set(rep.id, rep.name);
}
var NODE = { nodeW: 188, nodeH: 60 };
function stepState(st) {
  if (!st.status) return "missing";
  if (st.status === "waiting" && st.waiting_for) return `waiting \xB7 after ${st.waiting_for}`;
  if (st.status === "running" || st.status === "failed") return `${st.status} \xB7 attempt ${st.attempt}`;
  return st.status;
}
function stepNote(st) {
  return [
    st.problem,
    st.last_error && `last error: ${st.last_error}`,
    st.cancel_reason && `cancelled: ${st.cancel_reason}`,
    st.status === "waiting" && st.waiting_for && `waiting for ${st.waiting_for}`
  ].filter(Boolean).join(" \xB7 ");
}
function renderWorkflow(now) {
  $("#wf-list").hidden = Boolean(state.workflow);
  $("#wf-box").hidden = !state.workflow;
  if (!state.workflow) {
    renderWorkflowNames(now);
    return;
  }
  $("#wf-all").href = navFragment(state.cfg, { view: "workflow" });
  const wf = state.wf?.ref === state.workflow ? state.wf : null;
  if (!wf) {
    $("#wf-head").replaceChildren(h("p", { class: "dim" }, `Reading workflow ${state.workflow}\u2026`));
    for (const id of ["#wf-graph", "#wf-steps", "#wf-cost"]) $(id).replaceChildren();
    $("#wf-cancel").disabled = true;
    renderDetail(now);
    return;
  }
  const rep = wf.rep;
  const counts = Object.entries(rep.counts || {}).sort(([a], [b]) => STATUSES.indexOf(a) - STATUSES.indexOf(b)).map(([st, n]) => `${n} ${st}`);
  const missing = rep.steps.filter((st) => !st.status).length;
  if (missing) counts.push(`${missing} missing`);
  $("#wf-head").replaceChildren(
    h("h2", {}, rep.name ? `Workflow ${rep.name}` : "Workflow", " ", h("span", { class: `st ${rep.status}`, id: "wf-status" }, rep.status)),
    h(
      "p",
      { class: "facts" },
      h("span", {}, "id ", h("span", { class: "mono", id: "wf-id" }, rep.id)),
      h("span", { id: "wf-counts" }, `${rep.steps.length} step${rep.steps.length === 1 ? "" : "s"}: ${counts.join(", ")}`),
      h("span", {}, `created ${rep.created_at ? `${new Date(rep.created_at).toLocaleString()} (${ago(rep.created_at, now)})` : "-"}`),
      h("span", {}, `ended ${rep.ended_at ? `${new Date(rep.ended_at).toLocaleString()} (${ago(rep.ended_at, now)})` : "-"}`),
      rep.idempotency_key ? h("span", { class: "dim" }, `idempotency key ${rep.idempotency_key}`) : null
    )
  );
  const open = stepsToCancel(rep).flat();
  $("#wf-cancel").disabled = open.length === 0 || readOnly();
  $("#wf-cancel").title = readOnly() ? READ_ONLY : open.length ? `cancel the ${open.length} step(s) that have not ended` : "every step has ended";
  const api = state.backend.kind === "API";
  const byName = workflowRef2(state.workflow) !== rep.id;
  $("#wf-cost").textContent = `Each refresh: ${api ? "1 GET to qo serve, which makes " : ""}${rep.steps.length + 1 + (byName ? 1 : 0)} GET (1 per step, +1 for the record${byName ? ", +1 for the name" : ""})${wf.made ? `; the last sent ${formatOps(wf.made)}${api ? " to qo serve" : ""}` : ""}.`;
  renderGraph(rep);
  $("#wf-steps").replaceChildren(...rep.steps.map((st) => h(
    "tr",
    { class: "wf-step", "data-step": st.name },
    h("td", {}, h("a", { href: navFragment(state.cfg, { view: "workflow", workflow: state.workflow, task: st.task_id }), title: st.task_id }, st.name)),
    h("td", {}, st.task_type),
    h("td", {}, h("span", { class: `st ${st.status || "incomplete"}` }, st.status || "missing")),
    h("td", { class: st.last_error || st.problem ? "error" : "dim" }, stepNote(st) || "-"),
    h("td", {}, stepActions(st).includes("replay") && st.status && !readOnly() ? h("button", { class: "wf-replay", "data-replay": st.name, onclick: () => replayStep(st) }, "Replay") : null)
  )));
  renderDetail(now);
}
function renderGraph(rep) {
  const L = layout(rep, NODE);
  const mid = (e) => e.x1 + (e.x2 - e.x1) / 2;
  const statusOf = new Map(rep.steps.map((st) => [st.name, st.status || "missing"]));
  const nodes = L.nodes.map((n) => {
    const st = n.step;
    const cls = st.status || "missing";
    const note = stepNote(st);
    const g = s(
      "g",
      {
        class: `step ${cls}${st.task_id === state.selected ? " sel" : ""}`,
        "data-step": st.name,
        "data-status": cls,
        transform: `translate(${n.x},${n.y})`,
        tabindex: 0,
        role: "button",
        "aria-label": `step ${st.name} (${st.task_type}): ${stepState(st)}${note ? `; ${note}` : ""}`
      },
      s("title", {}, `${st.name} (${st.task_type}): ${stepState(st)}${note ? `
${note}` : ""}`),
      s("rect", { width: L.nodeW, height: L.nodeH, rx: 6 }),
      s("text", { class: "name", x: 9, y: 18 }, clip(st.name, 24)),
      s("text", { class: "type", x: 9, y: 35 }, clip(st.task_type || "", 27)),
      s("text", { class: "state", x: 9, y: 52 }, clip(stepState(st), 27))
    );
    if (st.task_id && st.status) {
      g.addEventListener("click", () => select(st.task_id));
      g.addEventListener("keydown", (e) => {
        if (e.key === "Enter" || e.key === " ") {
          e.preventDefault();
          select(st.task_id);
        }
      });
    }
    return g;
  });
  const edges = L.edges.map((e) => s("path", {
    class: `edge ${statusOf.get(e.from)}`,
    "data-from": e.from,
    "data-to": e.to,
    "marker-end": "url(#wf-arrow)",
    d: `M${e.x1},${e.y1} C${mid(e)},${e.y1} ${mid(e)},${e.y2} ${e.x2 - 2},${e.y2}`
  }));
  const ended = rep.steps.filter((st) => TERMINAL.includes(st.status)).length;
  $("#wf-graph").replaceChildren(s(
    "svg",
    {
      class: "wf-graph",
      width: L.width,
      height: L.height,
      viewBox: `0 0 ${L.width} ${L.height}`,
      role: "group",
      "aria-label": `the ${rep.steps.length} steps of the workflow, ${ended} ended`
    },
    s("defs", {}, s(
      "marker",
      { id: "wf-arrow", viewBox: "0 0 10 10", refX: 9, refY: 5, markerWidth: 7, markerHeight: 7, orient: "auto" },
      s("path", { class: "arrowhead", d: "M0,0 L10,5 L0,10 z" })
    )),
    edges,
    nodes
  ));
}
function renderWorkflowNames(now) {
  const r = state.wfNames;
  const api = state.backend.kind === "API";
  const n = r?.workflows.length ?? 0;
  $("#wf-names-info").textContent = r ? `${fmt(n)} workflow name${n === 1 ? "" : "s"}${r.more ? " (the first 1,000)" : ""}; each refresh: ${api ? "1 GET to qo serve, which makes " : ""}1 LIST + 1 GET per name. A workflow without a name opens by its id.` : "Reading the workflow names\u2026";
  const rows = (r?.workflows || []).slice().sort((a, b) => a.name.localeCompare(b.name)).map((w) => h(
    "tr",
    { class: "wf-name", "data-name": w.name },
    h("td", {}, h("a", { href: navFragment(state.cfg, { view: "workflow", workflow: w.name }) }, w.name)),
    h("td", { class: "mono", title: w.id }, h("a", { href: navFragment(state.cfg, { view: "workflow", workflow: w.id }) }, shortID(w.id))),
    h("td", {}, ago(w.created_at, now))
  ));
  $("#wf-names").replaceChildren(...rows.length ? rows : [h("tr", {}, h("td", { colspan: 3, class: "dim" }, r ? 'no named workflows (qo submit --workflow FILE, with a "name")' : ""))]);
}
async function replayStep(st) {
  if (!confirm(`Replay step ${st.name} (task ${st.task_id}, ${st.status})? Its children that it stopped wait for it again.`)) return;
  await action(async () => {
    const next = await state.backend.act("replay", st.task_id, state.shardChars);
    state.flash = `replay: step ${st.name} is now ${next.status}`;
  });
}
async function cancelRest() {
  const rep = state.wf?.rep;
  if (!rep) return;
  const open = stepsToCancel(rep).flat();
  if (!open.length) return;
  const running = open.filter((st) => st.status === "running").length;
  const what = `${open.length} step${open.length === 1 ? "" : "s"} (${open.map((st) => st.name).slice(0, 8).join(", ")}${open.length > 8 ? ", \u2026" : ""})`;
  if (!confirm(`Cancel the rest of workflow ${rep.name || rep.id}? ${what} that ${open.length === 1 ? "has" : "have"} not ended ${open.length === 1 ? "is" : "are"} cancelled, children first${running ? `; ${running} running ${running === 1 ? "is" : "are"} asked to stop` : ""}.`)) return;
  const ref = state.workflow;
  await action(async () => {
    const r = await state.backend.cancelWorkflow(ref, "from the web UI");
    state.flash = `cancelled ${r.cancelled} step${r.cancelled === 1 ? "" : "s"} of workflow ${rep.name || rep.id}`;
  });
}
async function load4(gen, backend) {
  await loadWorkflow(gen, backend);
  if (state.selected) await loadDetail(state.selected);
}
function wire3() {
  $("#wf-cancel").addEventListener("click", cancelRest);
  $("#wf-open").addEventListener("submit", (e) => {
    e.preventDefault();
    const ref = workflowRef2($("#wf-ref").value.trim());
    if (ref) go("workflow", { workflow: ref });
    else state.flash = "give a workflow id or name (letters, digits and _ . : -, at most 64)";
    renderStatus();
  });
}
var workflow = { load: load4, render: renderWorkflow, wire: wire3 };

// src/shell.js
function readFragment() {
  return readLink(location.hash);
}
function writeAddress(push) {
  const frag = navFragment(state.cfg, { view: state.view, task: state.selected || "", search: state.search?.text || "", type: state.filter.type, workflow: state.workflow });
  if (location.hash === frag) return;
  if (push) history.pushState(null, "", frag);
  else history.replaceState(null, "", location.pathname + location.search + frag);
}
function connect(cfg, nav = {}) {
  state.gen++;
  Object.assign(state, fresh());
  state.cfg = cfg;
  state.view = nav.view || "overview";
  state.selected = nav.task || null;
  state.filter.type = nav.type || "";
  state.workflow = nav.workflow || "";
  setSearch(nav.search || "");
  state.pendingNav = null;
  writeAddress(false);
  state.backend = cfg.api ? new ApiBackend({ api: cfg.api, token: cfg.token }) : new S3Backend({ endpoint: cfg.endpoint, bucket: cfg.bucket, region: cfg.region, accessKeyId: cfg.ak, secretAccessKey: cfg.sk, sessionToken: cfg.st });
  $("#login").hidden = true;
  $("#app").hidden = false;
  $("#search").disabled = false;
  $("#where").textContent = cfg.api ? `API ${cfg.api}` : `bucket ${cfg.bucket}${cfg.endpoint ? ` at ${cfg.endpoint}` : ""}`;
  $("#readonly").hidden = !readOnly();
  start();
}
function disconnect() {
  state.gen++;
  Object.assign(state, fresh());
  state.backend = null;
  state.cfg = {};
  clearInterval(state.tickTimer);
  state.tickTimer = null;
  $("#refreshed").textContent = "";
  $("#search").disabled = true;
  $("#bulk-dialog").close?.();
}
function showLogin(message) {
  $("#app").hidden = true;
  $("#login").hidden = false;
  $("#login-msg").textContent = message || "";
}
function openLink(cfg, nav = {}) {
  if (cfg.code) {
    const { code, ...rest } = cfg;
    history.replaceState(null, "", location.pathname + location.search + navFragment(rest, nav));
    const gen = ++state.gen;
    redeemCode(rest, code).then((creds) => {
      if (gen === state.gen) openLink({ ...rest, ...creds }, nav);
    }, (e) => {
      if (gen !== state.gen) return;
      if (rest.api) openLink(rest, nav);
      else {
        disconnect();
        state.pendingNav = nav;
        showLogin(`This link's one-time code did not work (${e.message}): get a new link (qo ui serve), or enter keys.`);
      }
    });
    return;
  }
  if (canConnect(cfg)) {
    connect(cfg, nav);
  } else {
    disconnect();
    state.pendingNav = nav;
    if (location.hash) history.replaceState(null, "", location.pathname + location.search + navFragment(cfg, nav));
    showLogin(cfg.bucket ? `Enter credentials for bucket ${cfg.bucket}.` : "");
  }
  if (cfg.bucket) {
    const form = $("#login-form");
    form.reset();
    for (const k of ["endpoint", "bucket", "region"]) if (cfg[k]) form.querySelector(`[name=${k}]`).value = cfg[k];
  }
}
async function redeemCode(cfg, code) {
  const url = cfg.api ? `${cfg.api.replace(/\/+$/, "")}/api/session` : new URL("session", location.href).href;
  const res = await fetch(url, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ code }),
    credentials: "same-origin",
    cache: "no-store"
  });
  const data = await res.json().catch(() => ({}));
  if (!res.ok) throw new Error(data.error?.message || `${res.status} ${res.statusText}`);
  if (cfg.api) return {};
  const creds = {};
  for (const k of ["ak", "sk", "st", "exp", "ro"]) if (typeof data[k] === "string" && data[k]) creds[k] = data[k];
  if (!creds.ak || !creds.sk) throw new Error("the server answered without credentials");
  return creds;
}
async function guard(fn) {
  const gen = state.gen;
  let error = "";
  try {
    await fn();
  } catch (e) {
    if (e instanceof Stale) return;
    error = e.message;
  }
  if (gen !== state.gen) return;
  state.error = error;
  renderStatus();
}
async function start() {
  const gen = state.gen;
  const backend = state.backend;
  await guard(async () => {
    const shards2 = await backend.shards();
    current(gen);
    state.shards = shards2;
    state.shardChars = shards2[0]?.length || 1;
  });
  if (gen !== state.gen) return;
  renderFilters();
  render();
  await refresh();
  if (gen !== state.gen) return;
  tick();
  clearInterval(state.tickTimer);
  state.tickTimer = setInterval(tick, 1e3);
}
var SCREENS = { overview, tasks, dead: tasks, search, workers, schedules, workflow };
function screen(view) {
  return Object.hasOwn(SCREENS, view) ? SCREENS[view] : workers;
}
async function refresh() {
  const gen = state.gen;
  const backend = state.backend;
  if (!backend) return;
  if (state.loading) {
    state.reload = true;
    return;
  }
  state.loading = true;
  let ok = false;
  await guard(async () => {
    await screen(state.view).load(gen, backend);
    const control = await backend.control().catch((e) => ({ error: e.message }));
    current(gen);
    state.control = control;
    ok = true;
  });
  if (gen !== state.gen) return;
  if (ok) state.refreshedAt = /* @__PURE__ */ new Date();
  else state.failedAt = /* @__PURE__ */ new Date();
  render();
  state.loading = false;
  if (state.reload) {
    state.reload = false;
    refresh();
  }
}
function setRefresh(seconds) {
  clearInterval(state.refreshTimer);
  state.refreshSeconds = seconds;
  state.refreshTimer = seconds > 0 ? setInterval(() => {
    if (!document.hidden && !state.bulk?.running) refresh();
  }, seconds * 1e3) : null;
  renderStatus();
}
function tick() {
  if (!state.backend) return;
  const now = state.backend.now();
  for (const el2 of document.querySelectorAll("[data-countdown]")) {
    const t = shownTasks().find((x) => x.id === el2.dataset.countdown);
    if (t) el2.textContent = countdown(t, now);
  }
  const exp = state.cfg.exp;
  const el = $("#expiry");
  if (!exp) {
    el.textContent = state.cfg.api ? "" : "credentials: entered by hand or long-lived (kept in this page only)";
  } else {
    const left = Date.parse(exp) - Date.now();
    el.textContent = left > 0 ? `credentials expire in ${short(left)}` : "credentials expired: get a new link with qo ui url";
    el.className = left > 3e5 ? "" : "warn";
  }
}
function renderStatus() {
  const el = $("#status");
  const retry = state.refreshSeconds ? ` Retrying every ${state.refreshSeconds} s.` : " Auto-refresh is off: press Refresh to try again.";
  el.textContent = state.error ? `Error: ${state.error}.${retry}` : state.flash;
  el.className = state.error ? "error banner" : "ok";
  el.setAttribute("role", state.error ? "alert" : "status");
  const t = (d) => d.toLocaleTimeString();
  const r = $("#refreshed");
  if (!state.backend) r.textContent = "";
  else if (state.error && state.failedAt) r.textContent = `refresh failed ${t(state.failedAt)}${state.refreshedAt ? ` \xB7 last refreshed ${t(state.refreshedAt)}` : ""}`;
  else r.textContent = state.refreshedAt ? `last refreshed ${t(state.refreshedAt)}` : "loading\u2026";
  r.className = state.error ? "warn" : "dim";
}
function renderFilters() {
  const shard = $("#shard");
  shard.replaceChildren(h("option", { value: "" }, "all shards"), ...state.shards.map((s2) => h("option", { value: s2 }, `shard ${s2}`)));
  const status = $("#statusf");
  const recent = `last ${LIST_WINDOW_MS / 36e5} h`;
  status.replaceChildren(
    h("option", { value: "" }, `all but archived (${recent})`),
    ...STATUSES.map((s2) => h("option", { value: s2 }, INDEXED.includes(s2) ? s2 : `${s2} (${recent})`))
  );
}
function renderPaused() {
  const c = state.control;
  const types = Object.entries(c?.paused_types || {}).sort(([a], [b]) => a.localeCompare(b));
  const parts = [];
  if (c?.error) parts.push(`The pause switches (control.json) could not be read: ${c.error}`);
  if (c?.paused) parts.push(`The whole queue is paused${c.reason ? `: ${c.reason}` : ""} (since ${c.paused_at || "-"}). Workers start nothing until qo resume --all.`);
  if (types.length) parts.push(`Paused types: ${types.map(([t, p]) => p.reason ? `${t} (${p.reason})` : t).join(", ")}.`);
  const el = $("#paused");
  el.textContent = parts.join(" ");
  el.hidden = parts.length === 0;
}
function renderViews() {
  for (const v of VIEWS) {
    const tab = $(`#tab-${v}`);
    tab.classList.toggle("on", state.view === v);
    tab.setAttribute("aria-current", state.view === v ? "page" : "false");
  }
  const list = state.view === "tasks" || state.view === "dead" || state.view === "search";
  $("#overview-view").hidden = state.view !== "overview";
  $("#tasks-view").hidden = !list;
  $("#workers-view").hidden = state.view !== "workers";
  $("#schedules-view").hidden = state.view !== "schedules";
  $("#workflow-view").hidden = state.view !== "workflow";
  const host = state.view === "workflow" ? $("#wf-detail") : $("#tasks-split");
  if ($("#detail").parentElement !== host) host.append($("#detail"));
  $("#statusf").hidden = state.view !== "tasks";
  $("#shard").hidden = state.view === "search";
  $("#typef").hidden = state.view !== "dead";
  $("#paging").hidden = state.view === "search";
  $("#bulk").hidden = !checkable();
  $("#bulk-progress").hidden = !checkable() || !state.bulk?.progress;
  $("#search-info").hidden = state.view !== "search";
  $("#list-title").textContent = state.view === "dead" ? "Dead letters: failed tasks, newest failure first" : state.view === "search" ? `Search: ${state.search?.text ?? ""}` : "";
}
function render() {
  const readOnly2 = Boolean(state.backend?.readOnly);
  document.body.classList.toggle("readonly", readOnly2);
  $("#readonly-note").hidden = !readOnly2;
  renderViews();
  renderPaused();
  const now = state.backend.now();
  $("#malformed").textContent = state.malformed?.length ? `${state.malformed.length} malformed object(s) skipped, e.g. ${state.malformed[0].key}: ${state.malformed[0].error}` : "";
  screen(state.view).render(now);
  renderStatus();
}
async function action(fn) {
  let ok = false;
  await guard(async () => {
    await fn();
    ok = true;
  });
  if (ok) await refresh();
  return ok;
}
function go(view, { task = "", push = true, search: search2, type, workflow: workflow2 } = {}) {
  if (!PAGES.includes(view) || !state.backend) return;
  const changed = view !== state.view;
  let reset = changed;
  if (search2 !== void 0 && search2 !== (state.search?.text ?? "")) {
    setSearch(search2);
    reset = true;
  }
  if (view === "search" && !state.search) return;
  if (changed && type === void 0) type = "";
  if (type !== void 0 && type !== state.filter.type) {
    state.filter.type = type;
    reset = true;
  }
  if (changed && workflow2 === void 0) workflow2 = "";
  if (workflow2 !== void 0 && workflow2 !== state.workflow) {
    state.workflow = workflow2;
    state.wf = null;
    reset = true;
  }
  if (reset || task !== (state.selected || "")) {
    state.selected = task || null;
    state.marks = [];
  }
  if (reset) {
    state.cursors = [""];
    state.page = 0;
    state.malformed = [];
    state.checked.clear();
  }
  state.view = view;
  writeAddress(push);
  render();
  refresh();
}
function boot() {
  $("#login-form").addEventListener("submit", (e) => {
    e.preventDefault();
    const f = new FormData(e.target);
    connect(Object.fromEntries([...f.entries()].filter(([, v]) => v)), state.pendingNav || {});
  });
  document.addEventListener("visibilitychange", () => {
    if (document.hidden || !state.refreshSeconds || !state.backend) return;
    if (!state.refreshedAt || Date.now() - state.refreshedAt >= state.refreshSeconds * 1e3) refresh();
  });
  for (const v of VIEWS) $(`#tab-${v}`).addEventListener("click", () => go(v, v === "workflow" ? { workflow: "" } : {}));
  workflow.wire();
  overview.wire();
  $("#refresh-now").addEventListener("click", refresh);
  $("#interval").addEventListener("change", (e) => setRefresh(Number(e.target.value)));
  tasks.wire();
  document.addEventListener("keydown", onKey);
  window.addEventListener("hashchange", onHashChange);
  setRefresh(Number($("#interval").value));
  const first = readFragment();
  openLink(first.cfg, first.nav);
}
var KEY_VIEWS = { o: "overview", t: "tasks", d: "dead", w: "workers", s: "schedules", f: "workflow" };
var gPressed = 0;
function onKey(e) {
  if (!state.backend || e.ctrlKey || e.metaKey || e.altKey || e.target.closest?.("input, select, textarea, [contenteditable]")) return;
  if (document.querySelector("dialog[open]")) return;
  const afterG = gPressed && Date.now() - gPressed < 1500;
  gPressed = 0;
  if (e.key === "/") {
    e.preventDefault();
    $("#search").focus();
    $("#search").select();
    return;
  }
  let view = "";
  if (afterG) view = KEY_VIEWS[e.key] || "";
  else if (/^[1-9]$/.test(e.key)) view = VIEWS[Number(e.key) - 1] || "";
  if (view) {
    e.preventDefault();
    go(view);
  } else if (e.key === "g") {
    gPressed = Date.now();
  } else if (e.key === "r" && !afterG) {
    refresh();
  }
}
function onHashChange() {
  const { cfg, nav } = readFragment();
  if (state.backend && isNavigation(cfg, state.cfg)) {
    if (nav.view || nav.task) {
      go(nav.view, {
        task: nav.task,
        push: false,
        search: nav.view === "search" ? nav.search : void 0,
        type: nav.view === "dead" ? nav.type : void 0,
        workflow: nav.view === "workflow" ? nav.workflow : void 0
      });
    } else writeAddress(false);
    return;
  }
  if (cfg.bucket || cfg.api) openLink(cfg, nav);
  else if (!state.backend && (nav.view || nav.task)) state.pendingNav = nav;
}

// src/app.js
boot();
