const test = require('node:test')
const assert = require('node:assert')
const countNumbers = require('..')

test('numbers and numeric strings count', () => {
  assert.strictEqual(countNumbers([1, '2', 'x']), 2)
})

test('empty strings do not count', () => {
  assert.strictEqual(countNumbers(['', ' ']), 0)
})
