-- Records where to call back when a turn of the session ends (the producer mount's start): the
-- consumer's URL and token, in the state hash so that they expire with the session. A repeat (a
-- retried start) replaces them, forgets the failed attempts and keeps the sequence already
-- delivered.
local url = ARGV[1]
local token = ARGV[2]

if redis.call('EXISTS', state_key) == 0 then return 0 end
redis.call('HSET', state_key, 'callbackUrl', url, 'callbackToken', token)
redis.call('HDEL', state_key, 'callbackFailing', 'callbackAttempts')
return 1
