import { runDemo } from './demo.ts';

await runDemo({
  line: (text) => process.stdout.write(`${text}\n`),
  color: process.stdout.isTTY === true && process.env.NO_COLOR === undefined,
});
