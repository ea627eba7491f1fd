const isNumber = require('is-number')

// The number of numeric things in a list.
module.exports = function countNumbers (items) {
  return items.filter(isNumber).length
}
