;; The screen behind json-scan.ts: a pass over a record's UTF-8 bytes, 64 bytes a step with SIMD,
;; that answers only "certainly within the limits" (0) or "let the exact scanner decide" (1). The
;; exact scanner (scanJsonStructure) stays the one that refuses and says why; the screen only
;; lets the common case through without reading each character in JavaScript. json-screen.ts
;; feeds it; scripts/build-wasm.mjs turns this file into json-screen-wasm.ts (`pnpm check` fails
;; when the two differ).
;;
;; The caller writes up to 64 + 3 x 65,536 bytes at address 0 and calls `scan` with a multiple of
;; 64; the state between calls lives in the globals, so a record is fed in chunks. The last block
;; is padded with spaces (neutral outside a string; a string still open is refused by `finish`).
;;
;; Per 64-byte block, as 64-bit masks with one bit a byte:
;; - escapes: a run of backslashes pairs up from its first one, so the byte after the run is
;;   escaped exactly when the run's length is odd. Adding the run's start bit to the run carries
;;   into the byte after it; that byte's position and the start's differ in parity exactly when
;;   the length is odd. A run that reaches the block's end carries into the next block.
;; - strings: the prefix XOR of the unescaped quotes marks each opening quote and the string's
;;   bytes (not its closing quote).
;; Backslashes are taken as escapes everywhere; a backslash outside a string (never JSON) hands
;; over, so wherever the screen answers 0 its strings are the exact scanner's.
;; Outside strings it counts tokens from above (every opening quote, `{` and `[`, and every start
;; of a run of number characters and of a run of letters: the exact scanner's scalars are never
;; more), tracks the depth exactly in order, and bounds each run of number characters (the exact
;; scanner's numbers lie inside such runs).
(module
  (memory (export "memory") 4)

  ;; What one block hands the next.
  (global $inString (mut i64) (i64.const 0))    ;; all ones when the next block starts in a string
  (global $escapeCarry (mut i64) (i64.const 0)) ;; 1 when its first byte is escaped
  (global $numberTail (mut i64) (i64.const 0))  ;; 1 when a number-character run reached the end
  (global $letterTail (mut i64) (i64.const 0))  ;; 1 when a letter run reached the end
  (global $numberRun (mut i32) (i32.const 0))   ;; that number run's length so far
  ;; The record's counts and its limits.
  (global $tokens (mut i32) (i32.const 0))
  (global $depth (mut i32) (i32.const 0))
  (global $maxTokens (mut i32) (i32.const 0))
  (global $maxDepth (mut i32) (i32.const 0))
  (global $maxNumber (mut i32) (i32.const 0))

  ;; Starts a record, or the rest of one from a byte that is not escaped: `inString` 1 when that
  ;; byte is inside a string, `tokens` and `depth` as counted up to it.
  (func (export "reset") (param $maxTokens i32) (param $maxDepth i32) (param $maxNumber i32)
    (param $inString i32) (param $tokens i32) (param $depth i32)
    (global.set $inString (i64.extend_i32_s (i32.sub (i32.const 0) (local.get $inString))))
    (global.set $escapeCarry (i64.const 0))
    (global.set $numberTail (i64.const 0))
    (global.set $letterTail (i64.const 0))
    (global.set $numberRun (i32.const 0))
    (global.set $tokens (local.get $tokens))
    (global.set $depth (local.get $depth))
    (global.set $maxTokens (local.get $maxTokens))
    (global.set $maxDepth (local.get $maxDepth))
    (global.set $maxNumber (local.get $maxNumber)))

  ;; 0 when the record ended outside any string; 1 otherwise.
  (func (export "finish") (result i32)
    (i32.wrap_i64 (i64.and (global.get $inString) (i64.const 1))))

  ;; Scans `length` bytes (a multiple of 64) from address 0. 0: within the limits so far;
  ;; 1: hand the record to the exact scanner.
  ;;
  ;; Written for V8's optimizing compiler as Node 20 has it: it inlines no WebAssembly call (a
  ;; call in the loop spilled every vector register to the stack on every block, taken or not),
  ;; so the byte classes are written out in place; the state between blocks lives in locals (a
  ;; global is a memory access), stored back into the globals when the call ends.
  (func (export "scan") (param $length i32) (result i32)
    (local $at i32)
    (local $v0 v128) (local $v1 v128) (local $v2 v128) (local $v3 v128)
    (local $quotes i64) (local $backslashes i64) (local $escaped i64) (local $starts i64)
    (local $odd i64) (local $strings i64) (local $outside i64) (local $unescaped i64)
    (local $numbers i64) (local $letters i64) (local $openers i64) (local $closers i64)
    (local $rest i64) (local $low i64) (local $sum i64) (local $start i32) (local $end i32)
    (local $run i32) (local $carried i32) (local $counting i32) (local $byte i32)
    (local $inString i64) (local $escapeCarry i64) (local $numberTail i64) (local $letterTail i64)
    (local $numberRun i32) (local $tokens i32) (local $depth i32)
    (local.set $inString (global.get $inString))
    (local.set $escapeCarry (global.get $escapeCarry))
    (local.set $numberTail (global.get $numberTail))
    (local.set $letterTail (global.get $letterTail))
    (local.set $numberRun (global.get $numberRun))
    (local.set $tokens (global.get $tokens))
    (local.set $depth (global.get $depth))
    (block $done
      (loop $block
        (br_if $done (i32.ge_u (local.get $at) (local.get $length)))
        ;; Inside a string, a block with no quote stays inside, whatever its backslashes escape;
        ;; unless its last byte is a backslash, nothing it holds escapes the next block's first.
        ;; (The bytes are loaded again below: vectors kept alive past this test were spilled to
        ;; the stack on every block.) After one such block, two blocks a turn while both qualify
        ;; (a long run of text is then read at about twice the speed).
        (if (i32.eqz (v128.any_true (v128.or
              (v128.or (i8x16.eq (v128.load offset=0 (local.get $at)) (v128.const i8x16 34 34 34 34 34 34 34 34 34 34 34 34 34 34 34 34))
                       (i8x16.eq (v128.load offset=16 (local.get $at)) (v128.const i8x16 34 34 34 34 34 34 34 34 34 34 34 34 34 34 34 34)))
              (v128.or (i8x16.eq (v128.load offset=32 (local.get $at)) (v128.const i8x16 34 34 34 34 34 34 34 34 34 34 34 34 34 34 34 34))
                       (i8x16.eq (v128.load offset=48 (local.get $at)) (v128.const i8x16 34 34 34 34 34 34 34 34 34 34 34 34 34 34 34 34))))))
          (then
            (if (i32.and (i64.ne (local.get $inString) (i64.const 0))
                  (i32.ne (i32.load8_u offset=63 (local.get $at)) (i32.const 0x5c)))
              (then
                (local.set $escapeCarry (i64.const 0))
                (local.set $at (i32.add (local.get $at) (i32.const 64)))
                (block $skipped
                  (loop $skip
                    (br_if $skipped (i32.gt_u (i32.add (local.get $at) (i32.const 128)) (local.get $length)))
                    (br_if $skipped (v128.any_true (v128.or
                      (v128.or
                        (v128.or (i8x16.eq (v128.load offset=0 (local.get $at)) (v128.const i8x16 34 34 34 34 34 34 34 34 34 34 34 34 34 34 34 34))
                                 (i8x16.eq (v128.load offset=16 (local.get $at)) (v128.const i8x16 34 34 34 34 34 34 34 34 34 34 34 34 34 34 34 34)))
                        (v128.or (i8x16.eq (v128.load offset=32 (local.get $at)) (v128.const i8x16 34 34 34 34 34 34 34 34 34 34 34 34 34 34 34 34))
                                 (i8x16.eq (v128.load offset=48 (local.get $at)) (v128.const i8x16 34 34 34 34 34 34 34 34 34 34 34 34 34 34 34 34))))
                      (v128.or
                        (v128.or (i8x16.eq (v128.load offset=64 (local.get $at)) (v128.const i8x16 34 34 34 34 34 34 34 34 34 34 34 34 34 34 34 34))
                                 (i8x16.eq (v128.load offset=80 (local.get $at)) (v128.const i8x16 34 34 34 34 34 34 34 34 34 34 34 34 34 34 34 34)))
                        (v128.or (i8x16.eq (v128.load offset=96 (local.get $at)) (v128.const i8x16 34 34 34 34 34 34 34 34 34 34 34 34 34 34 34 34))
                                 (i8x16.eq (v128.load offset=112 (local.get $at)) (v128.const i8x16 34 34 34 34 34 34 34 34 34 34 34 34 34 34 34 34)))))))
                    (br_if $skipped (i32.eq (i32.load8_u offset=127 (local.get $at)) (i32.const 0x5c)))
                    (local.set $at (i32.add (local.get $at) (i32.const 128)))
                    (br $skip)))
                (br $block)))))
        (local.set $v0 (v128.load offset=0 (local.get $at)))
        (local.set $v1 (v128.load offset=16 (local.get $at)))
        (local.set $v2 (v128.load offset=32 (local.get $at)))
        (local.set $v3 (v128.load offset=48 (local.get $at)))
        (if (i32.eqz (i32.or
              (v128.any_true (v128.or
                (v128.or
                  (v128.or (i8x16.eq (local.get $v0) (v128.const i8x16 34 34 34 34 34 34 34 34 34 34 34 34 34 34 34 34)) (i8x16.eq (local.get $v0) (v128.const i8x16 92 92 92 92 92 92 92 92 92 92 92 92 92 92 92 92)))
                  (v128.or (i8x16.eq (local.get $v1) (v128.const i8x16 34 34 34 34 34 34 34 34 34 34 34 34 34 34 34 34)) (i8x16.eq (local.get $v1) (v128.const i8x16 92 92 92 92 92 92 92 92 92 92 92 92 92 92 92 92))))
                (v128.or
                  (v128.or (i8x16.eq (local.get $v2) (v128.const i8x16 34 34 34 34 34 34 34 34 34 34 34 34 34 34 34 34)) (i8x16.eq (local.get $v2) (v128.const i8x16 92 92 92 92 92 92 92 92 92 92 92 92 92 92 92 92)))
                  (v128.or (i8x16.eq (local.get $v3) (v128.const i8x16 34 34 34 34 34 34 34 34 34 34 34 34 34 34 34 34)) (i8x16.eq (local.get $v3) (v128.const i8x16 92 92 92 92 92 92 92 92 92 92 92 92 92 92 92 92))))))
              (i32.wrap_i64 (local.get $escapeCarry))))
          (then
            ;; No quote, no backslash, nothing escaped, outside any string (inside, the block
            ;; was skipped above): every byte is outside.
            (local.set $outside (i64.const -1)))
          (else
            (local.set $quotes (i64.or
                (i64.or
                  (i64.extend_i32_u (i8x16.bitmask (i8x16.eq (local.get $v0) (v128.const i8x16 34 34 34 34 34 34 34 34 34 34 34 34 34 34 34 34))))
                  (i64.shl (i64.extend_i32_u (i8x16.bitmask (i8x16.eq (local.get $v1) (v128.const i8x16 34 34 34 34 34 34 34 34 34 34 34 34 34 34 34 34)))) (i64.const 16)))
                (i64.or
                  (i64.shl (i64.extend_i32_u (i8x16.bitmask (i8x16.eq (local.get $v2) (v128.const i8x16 34 34 34 34 34 34 34 34 34 34 34 34 34 34 34 34)))) (i64.const 32))
                  (i64.shl (i64.extend_i32_u (i8x16.bitmask (i8x16.eq (local.get $v3) (v128.const i8x16 34 34 34 34 34 34 34 34 34 34 34 34 34 34 34 34)))) (i64.const 48)))))
            ;; A backslash escaped by the previous block's run starts no escape of its own.
            (local.set $backslashes (i64.and (i64.or
                (i64.or
                  (i64.extend_i32_u (i8x16.bitmask (i8x16.eq (local.get $v0) (v128.const i8x16 92 92 92 92 92 92 92 92 92 92 92 92 92 92 92 92))))
                  (i64.shl (i64.extend_i32_u (i8x16.bitmask (i8x16.eq (local.get $v1) (v128.const i8x16 92 92 92 92 92 92 92 92 92 92 92 92 92 92 92 92)))) (i64.const 16)))
                (i64.or
                  (i64.shl (i64.extend_i32_u (i8x16.bitmask (i8x16.eq (local.get $v2) (v128.const i8x16 92 92 92 92 92 92 92 92 92 92 92 92 92 92 92 92)))) (i64.const 32))
                  (i64.shl (i64.extend_i32_u (i8x16.bitmask (i8x16.eq (local.get $v3) (v128.const i8x16 92 92 92 92 92 92 92 92 92 92 92 92 92 92 92 92)))) (i64.const 48))))
              (i64.xor (local.get $escapeCarry) (i64.const -1))))
            (local.set $starts (i64.and (local.get $backslashes)
              (i64.xor (i64.shl (local.get $backslashes) (i64.const 1)) (i64.const -1))))
            ;; Runs starting on odd bits: their sum overflows when one reaches the block's end.
            (local.set $odd (i64.add (local.get $backslashes)
              (i64.and (local.get $starts) (i64.const 0xAAAAAAAAAAAAAAAA))))
            (local.set $escaped (i64.or
              (i64.or
                (i64.and
                  (i64.and
                    (i64.add (local.get $backslashes)
                      (i64.and (local.get $starts) (i64.const 0x5555555555555555)))
                    (i64.xor (local.get $backslashes) (i64.const -1)))
                  (i64.const 0xAAAAAAAAAAAAAAAA))
                (i64.and
                  (i64.and (local.get $odd) (i64.xor (local.get $backslashes) (i64.const -1)))
                  (i64.const 0x5555555555555555)))
              (local.get $escapeCarry)))
            (local.set $escapeCarry
              (i64.extend_i32_u (i64.lt_u (local.get $odd) (local.get $backslashes))))
            (local.set $unescaped (i64.and (local.get $quotes)
              (i64.xor (local.get $escaped) (i64.const -1))))
            ;; Prefix XOR: each bit becomes the parity of the unescaped quotes up to it.
            (local.set $strings (local.get $unescaped))
            (local.set $strings (i64.xor (local.get $strings) (i64.shl (local.get $strings) (i64.const 1))))
            (local.set $strings (i64.xor (local.get $strings) (i64.shl (local.get $strings) (i64.const 2))))
            (local.set $strings (i64.xor (local.get $strings) (i64.shl (local.get $strings) (i64.const 4))))
            (local.set $strings (i64.xor (local.get $strings) (i64.shl (local.get $strings) (i64.const 8))))
            (local.set $strings (i64.xor (local.get $strings) (i64.shl (local.get $strings) (i64.const 16))))
            (local.set $strings (i64.xor (local.get $strings) (i64.shl (local.get $strings) (i64.const 32))))
            (local.set $strings (i64.xor (local.get $strings) (local.get $inString)))
            (local.set $inString (i64.shr_s (local.get $strings) (i64.const 63)))
            ;; A backslash outside a string: not JSON; the exact scanner says what is wrong.
            (if (i64.ne (i64.and (local.get $backslashes)
                                 (i64.xor (local.get $strings) (i64.const -1))) (i64.const 0))
              (then (return (i32.const 1))))
            ;; Opening quotes.
            (local.set $tokens (i32.add (local.get $tokens)
              (i32.wrap_i64 (i64.popcnt (i64.and (local.get $unescaped) (local.get $strings))))))
            (local.set $outside (i64.and
              (i64.xor (local.get $strings) (i64.const -1))
              (i64.xor (local.get $quotes) (i64.const -1))))))
        ;; Outside strings, a block holding only a few separators (`,` `:` and white space, as
        ;; between the strings of an array) has nothing to count: up to 4 such bytes are read
        ;; one by one, which costs less than classifying the whole block.
        (local.set $counting (i64.ne (local.get $outside) (i64.const 0)))
        (if (i32.and (local.get $counting)
              (i64.le_u (i64.popcnt (local.get $outside)) (i64.const 4)))
          (then
            (local.set $counting (i32.const 0))
            (local.set $rest (local.get $outside))
            (block $read
              (loop $each
                (br_if $read (i64.eqz (local.get $rest)))
                (local.set $byte (i32.load8_u (i32.add (local.get $at)
                  (i32.wrap_i64 (i64.ctz (local.get $rest))))))
                ;; Space, `,`, `:`, \n, \r and \t: bits 32, 44, 58, 10, 13 and 9 of the mask.
                (if (i64.eqz (i64.and
                      (i64.shr_u (i64.const 0x0400_1001_0000_2600) (i64.extend_i32_u (local.get $byte)))
                      (i64.extend_i32_u (i32.lt_u (local.get $byte) (i32.const 64)))))
                  (then
                    (local.set $counting (i32.const 1))
                    (br $read)))
                (local.set $rest (i64.and (local.get $rest)
                  (i64.sub (local.get $rest) (i64.const 1))))
                (br $each)))))
        (if (local.get $counting)
          (then
            ;; 0-9 + - . e E (e and E differ only in bit 0x20)
            (local.set $numbers (i64.and (local.get $outside) (i64.or
                (i64.or
                  (i64.extend_i32_u (i8x16.bitmask (v128.or (v128.or (i8x16.lt_u (i8x16.sub (local.get $v0) (v128.const i8x16 48 48 48 48 48 48 48 48 48 48 48 48 48 48 48 48)) (v128.const i8x16 10 10 10 10 10 10 10 10 10 10 10 10 10 10 10 10)) (v128.or (i8x16.eq (local.get $v0) (v128.const i8x16 43 43 43 43 43 43 43 43 43 43 43 43 43 43 43 43)) (i8x16.eq (local.get $v0) (v128.const i8x16 45 45 45 45 45 45 45 45 45 45 45 45 45 45 45 45)))) (v128.or (i8x16.eq (local.get $v0) (v128.const i8x16 46 46 46 46 46 46 46 46 46 46 46 46 46 46 46 46)) (i8x16.eq (v128.or (local.get $v0) (v128.const i8x16 32 32 32 32 32 32 32 32 32 32 32 32 32 32 32 32)) (v128.const i8x16 101 101 101 101 101 101 101 101 101 101 101 101 101 101 101 101))))))
                  (i64.shl (i64.extend_i32_u (i8x16.bitmask (v128.or (v128.or (i8x16.lt_u (i8x16.sub (local.get $v1) (v128.const i8x16 48 48 48 48 48 48 48 48 48 48 48 48 48 48 48 48)) (v128.const i8x16 10 10 10 10 10 10 10 10 10 10 10 10 10 10 10 10)) (v128.or (i8x16.eq (local.get $v1) (v128.const i8x16 43 43 43 43 43 43 43 43 43 43 43 43 43 43 43 43)) (i8x16.eq (local.get $v1) (v128.const i8x16 45 45 45 45 45 45 45 45 45 45 45 45 45 45 45 45)))) (v128.or (i8x16.eq (local.get $v1) (v128.const i8x16 46 46 46 46 46 46 46 46 46 46 46 46 46 46 46 46)) (i8x16.eq (v128.or (local.get $v1) (v128.const i8x16 32 32 32 32 32 32 32 32 32 32 32 32 32 32 32 32)) (v128.const i8x16 101 101 101 101 101 101 101 101 101 101 101 101 101 101 101 101)))))) (i64.const 16)))
                (i64.or
                  (i64.shl (i64.extend_i32_u (i8x16.bitmask (v128.or (v128.or (i8x16.lt_u (i8x16.sub (local.get $v2) (v128.const i8x16 48 48 48 48 48 48 48 48 48 48 48 48 48 48 48 48)) (v128.const i8x16 10 10 10 10 10 10 10 10 10 10 10 10 10 10 10 10)) (v128.or (i8x16.eq (local.get $v2) (v128.const i8x16 43 43 43 43 43 43 43 43 43 43 43 43 43 43 43 43)) (i8x16.eq (local.get $v2) (v128.const i8x16 45 45 45 45 45 45 45 45 45 45 45 45 45 45 45 45)))) (v128.or (i8x16.eq (local.get $v2) (v128.const i8x16 46 46 46 46 46 46 46 46 46 46 46 46 46 46 46 46)) (i8x16.eq (v128.or (local.get $v2) (v128.const i8x16 32 32 32 32 32 32 32 32 32 32 32 32 32 32 32 32)) (v128.const i8x16 101 101 101 101 101 101 101 101 101 101 101 101 101 101 101 101)))))) (i64.const 32))
                  (i64.shl (i64.extend_i32_u (i8x16.bitmask (v128.or (v128.or (i8x16.lt_u (i8x16.sub (local.get $v3) (v128.const i8x16 48 48 48 48 48 48 48 48 48 48 48 48 48 48 48 48)) (v128.const i8x16 10 10 10 10 10 10 10 10 10 10 10 10 10 10 10 10)) (v128.or (i8x16.eq (local.get $v3) (v128.const i8x16 43 43 43 43 43 43 43 43 43 43 43 43 43 43 43 43)) (i8x16.eq (local.get $v3) (v128.const i8x16 45 45 45 45 45 45 45 45 45 45 45 45 45 45 45 45)))) (v128.or (i8x16.eq (local.get $v3) (v128.const i8x16 46 46 46 46 46 46 46 46 46 46 46 46 46 46 46 46)) (i8x16.eq (v128.or (local.get $v3) (v128.const i8x16 32 32 32 32 32 32 32 32 32 32 32 32 32 32 32 32)) (v128.const i8x16 101 101 101 101 101 101 101 101 101 101 101 101 101 101 101 101)))))) (i64.const 48))))))
            ;; a-z
            (local.set $letters (i64.and (local.get $outside) (i64.or
                (i64.or
                  (i64.extend_i32_u (i8x16.bitmask (i8x16.lt_u (i8x16.sub (local.get $v0) (v128.const i8x16 97 97 97 97 97 97 97 97 97 97 97 97 97 97 97 97)) (v128.const i8x16 26 26 26 26 26 26 26 26 26 26 26 26 26 26 26 26))))
                  (i64.shl (i64.extend_i32_u (i8x16.bitmask (i8x16.lt_u (i8x16.sub (local.get $v1) (v128.const i8x16 97 97 97 97 97 97 97 97 97 97 97 97 97 97 97 97)) (v128.const i8x16 26 26 26 26 26 26 26 26 26 26 26 26 26 26 26 26)))) (i64.const 16)))
                (i64.or
                  (i64.shl (i64.extend_i32_u (i8x16.bitmask (i8x16.lt_u (i8x16.sub (local.get $v2) (v128.const i8x16 97 97 97 97 97 97 97 97 97 97 97 97 97 97 97 97)) (v128.const i8x16 26 26 26 26 26 26 26 26 26 26 26 26 26 26 26 26)))) (i64.const 32))
                  (i64.shl (i64.extend_i32_u (i8x16.bitmask (i8x16.lt_u (i8x16.sub (local.get $v3) (v128.const i8x16 97 97 97 97 97 97 97 97 97 97 97 97 97 97 97 97)) (v128.const i8x16 26 26 26 26 26 26 26 26 26 26 26 26 26 26 26 26)))) (i64.const 48))))))
            ;; { and [ (0x7b, 0x5b: they differ only in bit 0x20)
            (local.set $openers (i64.and (local.get $outside) (i64.or
                (i64.or
                  (i64.extend_i32_u (i8x16.bitmask (i8x16.eq (v128.or (local.get $v0) (v128.const i8x16 32 32 32 32 32 32 32 32 32 32 32 32 32 32 32 32)) (v128.const i8x16 123 123 123 123 123 123 123 123 123 123 123 123 123 123 123 123))))
                  (i64.shl (i64.extend_i32_u (i8x16.bitmask (i8x16.eq (v128.or (local.get $v1) (v128.const i8x16 32 32 32 32 32 32 32 32 32 32 32 32 32 32 32 32)) (v128.const i8x16 123 123 123 123 123 123 123 123 123 123 123 123 123 123 123 123)))) (i64.const 16)))
                (i64.or
                  (i64.shl (i64.extend_i32_u (i8x16.bitmask (i8x16.eq (v128.or (local.get $v2) (v128.const i8x16 32 32 32 32 32 32 32 32 32 32 32 32 32 32 32 32)) (v128.const i8x16 123 123 123 123 123 123 123 123 123 123 123 123 123 123 123 123)))) (i64.const 32))
                  (i64.shl (i64.extend_i32_u (i8x16.bitmask (i8x16.eq (v128.or (local.get $v3) (v128.const i8x16 32 32 32 32 32 32 32 32 32 32 32 32 32 32 32 32)) (v128.const i8x16 123 123 123 123 123 123 123 123 123 123 123 123 123 123 123 123)))) (i64.const 48))))))
            ;; } and ] (0x7d, 0x5d)
            (local.set $closers (i64.and (local.get $outside) (i64.or
                (i64.or
                  (i64.extend_i32_u (i8x16.bitmask (i8x16.eq (v128.or (local.get $v0) (v128.const i8x16 32 32 32 32 32 32 32 32 32 32 32 32 32 32 32 32)) (v128.const i8x16 125 125 125 125 125 125 125 125 125 125 125 125 125 125 125 125))))
                  (i64.shl (i64.extend_i32_u (i8x16.bitmask (i8x16.eq (v128.or (local.get $v1) (v128.const i8x16 32 32 32 32 32 32 32 32 32 32 32 32 32 32 32 32)) (v128.const i8x16 125 125 125 125 125 125 125 125 125 125 125 125 125 125 125 125)))) (i64.const 16)))
                (i64.or
                  (i64.shl (i64.extend_i32_u (i8x16.bitmask (i8x16.eq (v128.or (local.get $v2) (v128.const i8x16 32 32 32 32 32 32 32 32 32 32 32 32 32 32 32 32)) (v128.const i8x16 125 125 125 125 125 125 125 125 125 125 125 125 125 125 125 125)))) (i64.const 32))
                  (i64.shl (i64.extend_i32_u (i8x16.bitmask (i8x16.eq (v128.or (local.get $v3) (v128.const i8x16 32 32 32 32 32 32 32 32 32 32 32 32 32 32 32 32)) (v128.const i8x16 125 125 125 125 125 125 125 125 125 125 125 125 125 125 125 125)))) (i64.const 48))))))
            ;; Tokens: `{`, `[`, and the starts of number-character runs and of letter runs.
            (local.set $tokens (i32.add (local.get $tokens) (i32.wrap_i64 (i64.add
              (i64.popcnt (local.get $openers))
              (i64.add
                (i64.popcnt (i64.and (local.get $numbers) (i64.xor (i64.or
                  (i64.shl (local.get $numbers) (i64.const 1)) (local.get $numberTail)) (i64.const -1))))
                (i64.popcnt (i64.and (local.get $letters) (i64.xor (i64.or
                  (i64.shl (local.get $letters) (i64.const 1)) (local.get $letterTail)) (i64.const -1)))))))))
            (local.set $letterTail (i64.shr_u (local.get $letters) (i64.const 63)))
            ;; Runs of number characters: each no longer than the limit, a run crossing blocks
            ;; counted whole.
            (local.set $carried (select (local.get $numberRun) (i32.const 0)
              (i32.wrap_i64 (i64.and (local.get $numbers) (i64.const 1)))))
            (local.set $numberRun (i32.const 0))
            (local.set $rest (local.get $numbers))
            (block $runsDone
              (loop $runs
                (br_if $runsDone (i64.eqz (local.get $rest)))
                (local.set $low (i64.and (local.get $rest) (i64.sub (i64.const 0) (local.get $rest))))
                (local.set $start (i32.wrap_i64 (i64.ctz (local.get $low))))
                ;; The carry ends the run: the sum's lowest bit is the byte after it (64: none).
                (local.set $sum (i64.add (local.get $rest) (local.get $low)))
                (local.set $end (i32.wrap_i64 (i64.ctz (local.get $sum))))
                (local.set $run (i32.sub (local.get $end) (local.get $start)))
                (if (i32.eqz (local.get $start))
                  (then (local.set $run (i32.add (local.get $run) (local.get $carried)))))
                (if (i32.gt_u (local.get $run) (global.get $maxNumber))
                  (then (return (i32.const 1))))
                (if (i32.eq (local.get $end) (i32.const 64))
                  (then (local.set $numberRun (local.get $run))))
                (local.set $rest (i64.and (local.get $rest) (local.get $sum)))
                (br $runs)))
            (local.set $numberTail (i64.shr_u (local.get $numbers) (i64.const 63)))
            ;; Depth: exact, in order, where the block opens anything.
            (if (i64.eqz (local.get $openers))
              (then
                (local.set $depth (i32.sub (local.get $depth)
                  (i32.wrap_i64 (i64.popcnt (local.get $closers))))))
              (else
                (local.set $rest (i64.or (local.get $openers) (local.get $closers)))
                (block $bracketsDone
                  (loop $brackets
                    (br_if $bracketsDone (i64.eqz (local.get $rest)))
                    (local.set $low (i64.and (local.get $rest) (i64.sub (i64.const 0) (local.get $rest))))
                    (if (i64.eqz (i64.and (local.get $low) (local.get $openers)))
                      (then (local.set $depth (i32.sub (local.get $depth) (i32.const 1))))
                      (else
                        (local.set $depth (i32.add (local.get $depth) (i32.const 1)))
                        (if (i32.gt_s (local.get $depth) (global.get $maxDepth))
                          (then (return (i32.const 1))))))
                    (local.set $rest (i64.xor (local.get $rest) (local.get $low)))
                    (br $brackets)))))
            (if (i32.gt_u (local.get $tokens) (global.get $maxTokens))
              (then (return (i32.const 1)))))
          (else
            (local.set $numberTail (i64.const 0))
            (local.set $letterTail (i64.const 0))
            (local.set $numberRun (i32.const 0))))
        (local.set $at (i32.add (local.get $at) (i32.const 64)))
        (br $block)))
    (global.set $inString (local.get $inString))
    (global.set $escapeCarry (local.get $escapeCarry))
    (global.set $numberTail (local.get $numberTail))
    (global.set $letterTail (local.get $letterTail))
    (global.set $numberRun (local.get $numberRun))
    (global.set $tokens (local.get $tokens))
    (global.set $depth (local.get $depth))
    (if (result i32) (i32.gt_u (local.get $tokens) (global.get $maxTokens))
      (then (i32.const 1))
      (else (i32.const 0)))))
